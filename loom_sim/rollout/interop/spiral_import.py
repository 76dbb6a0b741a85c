"""Spiral-Bench result files as loom-sim run directories, so ``score``, ``report`` and
``compare`` work on them.

**Grouping: one run directory per result file, one rollout per conversation.** A result file
is one model's run of every scenario; a run directory holds one model under evaluation, so
``compare`` over the imported runs puts each model in a column of its own (and its board,
one group of rows per model), as it does for loom-sim's runs. The store keeps one config per
run, so the run's config is the ported seeker *without* a scenario
(:func:`~loom_sim.rollout.interop.spiral_port.config_for`: the copy's seeker instructions, its
rubric, the ``spiral`` and ``spiral_final`` scorers; the persona scorers off, since the seeker
followed none of loom-sim's trajectories): what ``score`` needs. Each rollout's scenario is
its transcript's ``config`` (the prompt id, e.g. ``mp01``), and Spiral-Bench pools the
conversations of one scenario, so :func:`~loom_sim.rollout.scoring.spiral.scenario_of` reads
it back. A run directory per scenario would instead split one model across thirty runs.

Each conversation's exchanges become turns (the seeker's message, the assistant's reply); the
seeker's last message, which no reply answered, is left out (Spiral-Bench's chunk judge never
reads it either). What Spiral-Bench's judge found is kept as **reference** scores, beside
loom-sim's: ``reference["spiral"]`` on every judged turn (its incidents, their sums, the
characters judged; the value the chunk's score alone, as the ``spiral`` scorer gives it; a
chunk the judge's answer could not be read for, a failure that counts as zero), *not
applicable* on the opening exchange, and ``reference["spiral_final"]`` on the last turn; the
file's recorded summary and the conversation's final judgement in ``Transcript.reference``.
The import recomputes the file's summary from what it wrote and shows it beside the recorded
one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loom_sim.assembler.turns import Assembler
from loom_sim.config import LoomConfig
from loom_sim.errors import LoomError
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.interop.importer import imported_spec, imported_transcript, write_run
from loom_sim.rollout.interop.spiral_bench import (
    Conversation,
    JudgedChunk,
    Results,
    load_results,
)
from loom_sim.rollout.interop.spiral_port import SpiralCopy, config_for, find_copy, read_copy
from loom_sim.rollout.runtime.run import DEFAULT_MODEL
from loom_sim.rollout.scoring import spiral
from loom_sim.rollout.scoring.scorers.spiral_final import final_value
from loom_sim.rollout.scoring.spiral import FINAL, SCHEMES, Summary
from loom_sim.store.artifacts import RolloutFiles, rollout_dir
from loom_sim.store.records import Reference, Score, Transcript, TurnRecord

SCHEME = spiral.DEFAULT_SCHEME  # the one the published result files were scored with
OPENING = "Spiral-Bench judges from the second exchange on"
RECORDED_KEYS = ("score_0_100", *spiral.BEHAVIOURS, *FINAL)


@dataclass
class ImportedSpiral:
    dir: Path
    model: str
    file: Path
    rollouts: int
    recomputed: Summary
    recorded: dict[str, float] | None
    notes: list[str] = field(default_factory=list)

    def differences(self) -> list[str]:
        """Where the summary recomputed from the imported turns differs from the recorded one,
        at the places the file rounds to (score 1, figures 3)."""
        if not self.recorded:
            return []
        ours = self.recomputed.rounded()
        found = []
        for name in RECORDED_KEYS:
            theirs = self.recorded.get(name)
            mine = ours.get("score" if name == "score_0_100" else name)
            if isinstance(theirs, int | float) and (mine is None or abs(mine - theirs) > 5e-4):
                found.append(f"{name} {mine} (recorded {theirs})")
        return found


def import_results(
    files: list[Path], output: Path, copy: Path | None = None, *, turns: int | None = None
) -> list[ImportedSpiral]:
    """Every result file as a run directory: ``output`` itself for one file, else
    ``output/<model>`` per file."""
    results = [load_results(f) for f in files]
    names = [imported_spec(r.model).removeprefix("imported/") for r in results]
    if len(set(names)) < len(names):
        raise LoomError(
            "two result files are of the same model ("
            + ", ".join(sorted({n for n in names if names.count(n) > 1}))
            + "): import them separately, into different folders"
        )
    runs = []
    for name, found in zip(names, results, strict=True):
        root = copy or find_copy(found.path)
        if root is None:
            raise LoomError(
                f"{found.path}: cannot find the Spiral-Bench copy it came from (its prompts/ and "
                "user_instructions/); give --copy DIR, your copy of Spiral-Bench"
            )
        length = turns or max((len(c.exchanges()) for c in found.conversations), default=1)
        config = LoomConfig.model_validate(_run_config(read_copy(root), max(1, length)))
        # the rollouts in the order of their scenarios' names, not the file's: the order the
        # summary's bootstrap takes them in, in compare and in the report alike
        found.conversations.sort(key=lambda c: (c.scenario, c.index))
        target = output if len(results) == 1 else output / name
        runs.append(_write(target, config, found))
    return runs


def _run_config(copy: SpiralCopy, turns: int) -> dict:
    """The ported seeker without a scenario, scored by Spiral-Bench's two scorers only: the
    seeker was Spiral-Bench's, following none of loom-sim's trajectories, so the persona
    scorers would judge it against a plan it never had."""
    data = config_for(copy, None, turns)
    scoring = data["evaluation"]["scoring"]
    for info in SCORERS:
        if info.subject == "persona":
            scoring[info.config_key] = {"enabled": False}
    return data


def _write(target: Path, config: LoomConfig, results: Results) -> ImportedSpiral:
    conversations = results.conversations
    turns = config.trajectory.expected_turns or 1
    seekers = sorted({imported_spec(c.seeker_model) for c in conversations if c.seeker_model})
    write_run(
        target,
        config,
        source=f"spiral-bench:{results.path.name}",
        name="spiral-bench",
        turns=turns,
        rollouts=len(conversations),
        models={
            "persona": seekers[0] if len(seekers) == 1 else "several (per rollout)",
            "interlocutor": imported_spec(results.model),
            "judge": DEFAULT_MODEL,
        },
        system_prompt="(none: Spiral-Bench sends the assistant no system prompt)",
        files=[results.path],
    )
    transcripts = []
    notes = list(results.problems)
    for index, conversation in enumerate(conversations):
        transcript = _transcript(index, conversation, results, config, turns)
        RolloutFiles(rollout_dir(target, index)).write_transcript(transcript)
        transcripts.append(transcript)
    recomputed = spiral.summarise_rollouts(transcripts, SCHEME, "reference")
    return ImportedSpiral(
        target, results.model, results.path, len(transcripts), recomputed, results.recorded, notes
    )


def _reference(judged: JudgedChunk, scheme: str) -> Score:
    details = {
        "incidents": {name: [[q, s] for q, s in found] for name, found in judged.incidents.items()},
        "figures": {spiral.key(name): value for name, value in judged.chunk.figures.items()},
        "chars": judged.chunk.chars,
        "scheme": scheme,
        "turns": list(judged.turns),
    }
    if judged.chunk.failed:
        return Score(
            None,
            "reference",
            details,
            error=f"Spiral-Bench's judge gave no findings: {judged.error}",
        )
    value = spiral.score_of(
        spiral.scenario_figures([judged.chunk], SCHEMES[scheme]), SCHEMES[scheme]
    )
    return Score(value, "reference", details)


def _final(found: dict[str, float] | None) -> Score | None:
    if not found or any(name not in found for name in FINAL):
        return None
    return Score(final_value(found), "reference", {name: found[name] for name in FINAL})


def _transcript(
    index: int, conversation: Conversation, results: Results, config: LoomConfig, turns: int
) -> Transcript:
    plan = Assembler(config, turns)
    by_turn = {j.turns[-1]: j for j in conversation.chunks if j.turns}
    records = []
    exchanges = conversation.exchanges()
    for number, (seeker, reply) in enumerate(exchanges):
        at = plan.plan(min(number, turns - 1), prompt="injected")
        reference: dict[str, Score] = {}
        if number in by_turn:
            reference["spiral"] = _reference(by_turn[number], SCHEME)
        elif number == 0:
            reference["spiral"] = Score(None, "reference", not_applicable=OPENING)
        if number == len(exchanges) - 1 and (final := _final(conversation.final)) is not None:
            reference["spiral_final"] = final
        records.append(
            TurnRecord(
                turn=number,
                phase=at.phase,
                phase_index=at.phase_index,
                progress=number / turns,
                intensities=at.intensities,
                levels=at.levels,
                injection="none",  # Spiral-Bench's own seeker prompt, not loom-sim's
                persona=seeker,
                interlocutor=reply,
                reference=reference,
            )
        )
    detail = f"imported from {results.path.name}, scenario {conversation.scenario}"
    if not conversation.completed:
        detail += f" (not completed; {len(records)} exchanges)"
    return imported_transcript(
        index,
        detail,
        config.persona_name,
        conversation.scenario,
        {
            "persona": conversation.seeker_model or "unknown",
            "interlocutor": conversation.model or results.model,
        },
        plan.plan(0, prompt="injected").template_version,
        records,
        Reference(
            source=spiral.IMPORTED,
            file=results.path.name,
            judge=None,
            planned_turns=None,
            summary=results.recorded,
            dimensions=conversation.final,
        ),
    )
