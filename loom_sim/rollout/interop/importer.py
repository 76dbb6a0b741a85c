"""psychosis-bench transcripts as loom-sim run directories, so ``score`` and ``report`` work.

Transcripts are grouped by (profile, schedule): one run directory per group, one rollout per
transcript (so one run can compare the assistants a profile was played against). The run's
config is the profile ported with its schedule (:mod:`loom_sim.rollout.interop.port`); each turn
keeps
the phase and the prescribed intensities the source recorded, not recomputed ones. Incomplete
transcripts (an API error, ``status: in_progress``) are imported with the exchanges they have.

What the source's judge concluded is kept as **reference** scores, beside (never mixed with)
the ones loom-sim's scorers give: the per-turn DCS, HES and SIS on each turn
(``TurnRecord.reference``), and its summary, clinical markers and end-of-conversation
dimensions as written (``Transcript.reference``). The import recomputes the summary from the
per-turn scores and says so if it differs from the file's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from loom_sim import __version__
from loom_sim.assembler.intensity import level_of
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.config import LoomConfig
from loom_sim.config.spec import CURRENT_SCHEMA_VERSION
from loom_sim.core.header import versions
from loom_sim.errors import LoomError
from loom_sim.judging.prompts import RUBRIC_VERSION
from loom_sim.models.base import Usage
from loom_sim.rollout.interop.psychosis_bench import (
    SOURCE,
    BenchTranscript,
    load_transcript,
    reference_scores,
)
from loom_sim.rollout.runtime.run import DEFAULT_MODEL
from loom_sim.rollout.scoring.safety import as_source, differences, records_summary
from loom_sim.store.artifacts import RolloutFiles, config_hash, rollout_dir, write_json
from loom_sim.store.records import Reference, Score, Transcript, TurnRecord
from loom_sim.store.run_file import RUN_FILE, RunRecord

IMPORTED = "imported"  # the provider part of a model that cannot be called again


@dataclass
class ImportedRun:
    dir: Path
    profile: str
    schedule: str
    rollouts: list[str] = field(default_factory=list)  # source file per rollout
    notes: list[str] = field(default_factory=list)


def find_profiles_dir(source: Path) -> Path | None:
    """psychosis-bench keeps ``profiles/`` beside ``results/``: look upwards for it."""
    for parent in source.resolve().parents:
        candidate = parent / "profiles"
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    return None


def import_transcripts(
    files: list[Path], output: Path, profiles_dir: Path | None = None
) -> list[ImportedRun]:
    from loom_sim.rollout.interop.port import port_profile

    transcripts = [load_transcript(f) for f in files]
    groups: dict[tuple[str, str], list[BenchTranscript]] = {}
    for transcript in transcripts:
        groups.setdefault((transcript.profile, transcript.schedule), []).append(transcript)
    runs = []
    for (profile, schedule), members in groups.items():
        profiles = profiles_dir or find_profiles_dir(members[0].path)
        if profiles is None or not (profiles / f"{profile}.yaml").is_file():
            raise LoomError(
                f"{members[0].path}: cannot find the profile {profile}.yaml to port "
                "(give --profiles DIR, the psychosis-bench profiles folder)"
            )
        config_data, _ = port_profile(profiles / f"{profile}.yaml", schedule)
        config = LoomConfig.model_validate(config_data)
        target = output if len(groups) == 1 else output / f"{profile}.{schedule}"
        runs.append(_write_run(target, config, profile, schedule, members))
    return runs


def _write_run(
    target: Path, config: LoomConfig, profile: str, schedule: str, members: list[BenchTranscript]
) -> ImportedRun:
    run = ImportedRun(target, profile, schedule)
    turns = max((t.planned_turns or len(t.turns)) for t in members)
    interlocutors = sorted({imported_spec(t.model) for t in members})
    write_run(
        target,
        config,
        source=f"psychosis-bench:{profile}",
        name=f"{profile}.{schedule}",
        turns=turns,
        rollouts=len(members),
        models={
            "persona": imported_spec(members[0].patient_model),
            "interlocutor": interlocutors[0]
            if len(interlocutors) == 1
            else "several (per rollout)",
            "judge": DEFAULT_MODEL,
        },
        system_prompt="(as in the psychosis-bench run)",
        files=[t.path for t in members],
    )
    for index, source in enumerate(members):
        files = RolloutFiles(rollout_dir(target, index))
        transcript = _transcript(index, source, config, turns)
        files.write_transcript(transcript)
        run.rollouts.append(str(source.path))
        problems = list(source.problems) + _summary_check(transcript)
        if problems:
            run.notes.append(f"rollout_{index:03d} ({source.path.name}): {'; '.join(problems)}")
    return run


def write_run(
    target: Path,
    config: LoomConfig,
    *,
    source: str,
    name: str,
    turns: int,
    rollouts: int,
    models: dict[str, str],
    system_prompt: str,
    files: list[Path],
) -> None:
    """The ``run.json`` of an imported run, in a new folder ``target`` (a folder that already
    holds a run is refused): what every importer writes the same way."""
    if (target / RUN_FILE).exists():
        raise LoomError(f"{target} already holds a run; import into a new directory")
    target.mkdir(parents=True, exist_ok=True)
    config_data = config.model_dump(mode="json")
    record = RunRecord(
        loom_sim_version=__version__,
        schema_version=CURRENT_SCHEMA_VERSION,
        template_version=TEMPLATE_VERSION,
        rubric_version=RUBRIC_VERSION,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        config_path=source,
        config_name=name,
        config_sha256=config_hash(config_data),
        seed=0,
        turns=turns,
        rollouts=rollouts,
        models=models,
        interlocutor_system_prompt=system_prompt,
        versions=versions(),
        imported_from=[str(f) for f in files],
        config=config_data,
    )
    write_json(target / RUN_FILE, record)


def _transcript(index: int, source: BenchTranscript, config: LoomConfig, turns: int) -> Transcript:
    phases = [p.name for p in config.trajectory.phases]
    dims = config.trajectory.dimensions
    references = reference_scores(source)
    records = []
    for number, turn in enumerate(source.turns):
        phase = (
            turn.phase
            if turn.phase in phases
            else phases[min(len(phases) - 1, number * len(phases) // max(1, turns))]
        )
        intensities = {name: turn.intensity.get(name, 0.0) for name in dims}
        records.append(
            TurnRecord(
                turn=number,
                phase=phase,
                phase_index=phases.index(phase),
                progress=number / turns if turns else 0.0,
                intensities=intensities,
                levels={name: level_of(dims[name], value) for name, value in intensities.items()},
                injection="none",  # psychosis-bench's own scaffolding, not loom-sim's
                persona=turn.patient,
                interlocutor=turn.assistant,
                usage={
                    "persona": Usage(*turn.patient_tokens, None),
                    "interlocutor": Usage(*turn.assistant_tokens, None),
                },
                reference=references.get(turn.number, {}),
            )
        )
    dimensions = _dimensions(source)
    if records and dimensions is not None:  # judged at the end of the conversation
        last = records[-1]
        records[-1] = msgspec.structs.replace(
            last, reference={**last.reference, "dimensions": dimensions}
        )
    complete = source.status == "complete" and not source.problems
    return imported_transcript(
        index,
        f"imported from {source.path.name}"
        + ("" if complete else f" ({source.status}; {len(source.turns)} complete turns)"),
        config.persona_name,
        f"{source.profile}.{source.schedule}",
        {"persona": source.patient_model, "interlocutor": source.model},
        TEMPLATE_VERSION,
        records,
        Reference(
            source=SOURCE,
            file=source.path.name,
            judge=_judge(source),
            planned_turns=source.planned_turns,
            summary=source.raw.get("summary_metrics"),
            markers=source.raw.get("clinical_markers"),
            dimensions=source.raw.get("multi_dimensional_scores"),
        ),
    )


def imported_transcript(
    index: int,
    detail: str,
    persona: str,
    config: str,
    models: dict[str, str],
    template_version: str,
    turns: list[TurnRecord],
    reference: Reference,
) -> Transcript:
    """The transcript of a conversation another tool ran: ended, imported, its models named as
    the source named them (not callable again), no cost or times of ours."""
    return Transcript(
        rollout=f"rollout_{index:03d}",
        index=index,
        seed=0,
        status="done",
        stop_reason="imported",
        stop_detail=detail,
        error=None,
        persona=persona,
        config=config,
        models={**{role: imported_spec(m) for role, m in models.items()}, "judge": DEFAULT_MODEL},
        template_version=template_version,
        opener="persona",
        opening=None,
        turns=turns,
        usage={},
        cost_usd=None,
        started_at=0.0,
        ended_at=0.0,
        duration_s=0.0,
        reference=reference,
    )


def _judge(source: BenchTranscript) -> str | None:
    models = source.raw.get("models")
    judge = models.get("judge") if isinstance(models, dict) else None
    return str(judge) if judge else None


def _dimensions(source: BenchTranscript) -> Score | None:
    """The source's end-of-conversation dimension scores (1-10), when the file has them."""
    block = source.raw.get("multi_dimensional_scores")
    scores = block.get("scores") if isinstance(block, dict) else None
    if not isinstance(scores, dict) or not scores:
        return None
    given = {k: float(v) for k, v in scores.items() if isinstance(v, int | float) and 1 <= v <= 10}
    details = {"scores": {k: given.get(k) for k in scores}}
    if not given:
        return Score(None, "reference", details, error="no dimension scored 1-10")
    return Score(sum(given.values()) / len(given), "reference", details)


def _summary_check(transcript: Transcript) -> list[str]:
    """A note when the summary recomputed from the reference per-turn scores differs from
    the one the file holds (nothing when they agree, or the file has none)."""
    written = transcript.reference.summary if transcript.reference else None
    if not isinstance(written, dict):
        return []
    found = differences(as_source(records_summary(transcript.turns, reference=True)), written)
    return (
        [f"its summary_metrics differ from the recomputed ones ({'; '.join(found)})"]
        if found
        else []
    )


def imported_spec(model: str) -> str:
    """A provenance spec for a model that played in the source run (it cannot be called)."""
    return f"{IMPORTED}/{re.sub(r'[^A-Za-z0-9._-]+', '-', model) or 'unknown'}"


_spec = imported_spec  # its former name
