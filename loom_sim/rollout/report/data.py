"""The report's data: every number the Markdown and HTML reports show, built from a run dir.

One function (:func:`build_report`) reads ``run.json`` and every rollout's transcript and returns
plain JSON data; the renderers only format it. So ``report.json`` is the report a script can
read, and two renderers can never disagree about a number.

The scorers' own summaries (``Transcript.scores``) are used as written: the report must show
the numbers the scoring produced, not a second opinion. Only a rollout scored turn by turn but
without a summary is summarised here, by the scoring's own code (``aggregates_source:
"turns"``). The data holds no path and no clock reading of its own, so the same run gives
the same bytes anywhere.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

import msgspec

from loom_sim.config.spec import StagnationDetectionSpec
from loom_sim.errors import LoomError
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.report.adversary import adversary_section
from loom_sim.rollout.report.conformance import rollout_conformance
from loom_sim.rollout.report.faults import faults_section
from loom_sim.rollout.report.record import REPORT_VERSION, answering
from loom_sim.rollout.report.target import is_target, target_section
from loom_sim.rollout.scoring.aggregate import summarise
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE, TurnLog, read_transcript
from loom_sim.store.records import (
    RolloutScores,
    Transcript,
    TurnRecord,
)
from loom_sim.store.run_file import RunRecord, placeholder_transcript, read_run

EMBEDDED_JUDGE = "local/smollm2"
EMBEDDED_NOTICE = (
    "The judge was the embedded SmolLM2-135M model: its judgements are not meaningful; "
    "use a real judge model for results."
)
SCRIPTED_NOTICE = (
    "The judge was a scripted stand-in: its judgements are not meaningful (the deterministic "
    "measures are); use a real judge model for results."
)
TRAJECTORY_SCORERS = ("trajectory", "trajectory_adherence")  # whichever holds the gaps
RUN_KEYS = (  # copied from run.json as they are
    "config_name", "config_path", "config_sha256", "created_at", "seed", "turns", "rollouts",
    "loom_sim_version", "schema_version", "template_version", "rubric_version", "versions",
    "budgets", "interlocutor_system_prompt",
)  # fmt: skip
_BACKEND_IN_DETAIL = re.compile(r"\((embedding|tfidf)\)")


# ─── loading ────────────────────────────────────────────────────────────────


def load_transcript(path: Path) -> Transcript:
    return read_transcript(path)


def read_turns(path: Path) -> list[TurnRecord]:
    """A ``turns.jsonl`` read without touching it (``TurnLog.load`` repairs torn files; a
    viewer must not write): complete records; a damaged line is an error naming it."""
    return TurnLog(path).read()


def scorer_order() -> list[str]:
    """Scorers in the registry's order (the report's columns); others follow as first seen."""
    return SCORERS.names()


def persona_scorers(names: list[str]) -> list[str]:
    """The scorers of the persona simulator among ``names`` (the model under evaluation's
    have a section of their own, on scales of their own)."""
    return [name for name in names if not is_target(name)]


def partial_transcript(rollout_dir: Path, record: RunRecord | None = None) -> Transcript:
    """A rollout still running (or killed) has only ``turns.jsonl``: shown as ``incomplete``."""
    digits = rollout_dir.name.rpartition("_")[2]
    return placeholder_transcript(
        rollout_dir.name,
        int(digits) if digits.isdigit() else 0,
        record,
        status="incomplete",
        detail="no transcript.json yet: the rollout is running or was interrupted",
        turns=read_turns(rollout_dir / TURNS_FILE),
    )


def load_run(run_dir: Path) -> tuple[RunRecord, list[Transcript]]:
    """``run.json`` and every rollout, in rollout order; a LoomError when there is nothing."""
    if not run_dir.is_dir():
        raise LoomError(f"{run_dir}: not a directory (give a run directory)")
    run = read_run(run_dir)
    transcripts = []
    for rollout in sorted(p for p in run_dir.glob("rollout_*") if p.is_dir()):
        if (rollout / TRANSCRIPT_FILE).is_file():
            transcripts.append(load_transcript(rollout / TRANSCRIPT_FILE))
        elif (rollout / TURNS_FILE).is_file():
            transcripts.append(partial_transcript(rollout, run))
    if not transcripts:
        raise LoomError(f"{run_dir}: no transcripts (no rollout_*/{TRANSCRIPT_FILE} or turns)")
    return run, transcripts


# ─── numbers ────────────────────────────────────────────────────────────────


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(float(value), 6) if math.isfinite(value) else None


def describe(values: list[float | None]) -> dict[str, Any]:
    """Centre and spread; ``std`` is the sample standard deviation (None below two values)."""
    xs = [x for x in (_num(v) for v in values) if x is not None]
    if not xs:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return {
        "mean": _num(statistics.fmean(xs)),
        "std": _num(statistics.stdev(xs)) if len(xs) > 1 else None,
        "min": min(xs),
        "max": max(xs),
        "n": len(xs),
    }


def _mean(values: list[Any]) -> float | None:
    return describe(values)["mean"]


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _ordered(found: list[str], preferred: tuple[str, ...] | list[str]) -> list[str]:
    """Names in the preferred order, then the others in the order first seen."""
    first = [name for name in preferred if name in found]
    return first + [name for name in dict.fromkeys(found) if name not in first]


def _value(record: TurnRecord, scorer: str) -> float | None:
    score = record.scores.get(scorer)
    return _num(score.value) if score is not None else None


def _trajectory_details(record: TurnRecord) -> dict[str, Any]:
    for name in TRAJECTORY_SCORERS:
        if name in record.scores:
            return record.scores[name].details
    return {}


def _event(turn: int, event: Any) -> dict[str, Any]:
    values = {k: _num(v) for k, v in sorted(event.values.items())}
    return {
        "turn": turn,
        "monitor": event.monitor,
        "pattern": event.pattern,
        "action": event.action,
        "detail": event.detail,
        "attempt": event.attempt,
        "value": values.get("value"),
        "threshold": values.get("threshold"),
        "values": values,
    }


# ─── one rollout ────────────────────────────────────────────────────────────


def _thresholds(
    signals: dict[str, Any], events: list[dict[str, Any]], spec: StagnationDetectionSpec
) -> dict[str, Any]:
    """The loop and convergence thresholds the monitor used: they depend on the backend, and
    the embedding backend can fall back to TF-IDF at run time, so the config alone is not
    enough. The scorer's signals say it best, then the monitor's own events, then the config."""
    backend = signals.get("backend")
    loop, echo = _num(signals.get("loop_threshold")), _num(signals.get("convergence_threshold"))
    sources = {
        "loop": "signals" if loop is not None else None,
        "convergence": "signals" if echo is not None else None,
    }
    for e in events:
        found = _BACKEND_IN_DETAIL.search(e["detail"])
        backend = backend or (found.group(1) if found else None)
        if e["monitor"] == "stagnation" and loop is None and e["threshold"] is not None:
            loop, sources["loop"] = e["threshold"], "monitor"
        if e["monitor"] == "convergence" and echo is None and e["threshold"] is not None:
            echo, sources["convergence"] = e["threshold"], "monitor"
    backend = backend or spec.backend.value
    tfidf = backend == "tfidf"
    if loop is None:
        loop = spec.tfidf.similarity_threshold if tfidf else spec.similarity_threshold
    if echo is None:
        echo = spec.tfidf.convergence_threshold if tfidf else spec.convergence_threshold
    return {
        "loop": loop,
        "convergence": echo,
        "backend": backend,
        "window": spec.window,
        "min_turn": spec.min_turn,
        "source": {k: v or "config" for k, v in sources.items()},
    }


def _flagged(
    records: list[TurnRecord], summary: RolloutScores | None, scorers: list[str]
) -> list[dict[str, Any]]:
    if summary is None:
        return []
    by_turn = {r.turn: r for r in records}
    flagged = []
    for flag in summary.flagged:
        record = by_turn.get(flag.turn)
        entry: dict[str, Any] = {"turn": flag.turn, "reasons": list(flag.reasons)}
        if record is not None:
            entry |= {
                "phase": record.phase,
                "injection": record.injection,
                "persona": record.persona,
                "interlocutor": record.interlocutor,
                "tactic": record.adversary.tactic if record.adversary else None,
                "emergency": record.emergency,
                "monitor_events": [_event(record.turn, e) for e in record.monitor_events],
                "scores": {s: _value(record, s) for s in scorers if s in record.scores},
                "errors": {s: sc.error for s, sc in record.scores.items() if sc.error},
                # the messages cut off at their token limit (by role)
                "cut": [r for r in ("persona", "interlocutor") if record.cut_at_limit(r)],
            }
        flagged.append(entry)
    return flagged


def _series(records: list[TurnRecord], scorers: list[str], dims: list[str]) -> dict[str, Any]:
    """Per-turn values, aligned on ``turn``: None where a turn has no such value."""
    stagnation = [
        r.scores["stagnation"].details if "stagnation" in r.scores else {} for r in records
    ]
    trajectory = [_trajectory_details(r) for r in records]
    return {
        "turn": [r.turn for r in records],
        "phase": [r.phase for r in records],
        "injection": [r.injection for r in records],
        "prescribed": {d: [_num(r.intensities.get(d)) for r in records] for d in dims},
        "expressed": {d: [_num(_get(t, "expressed", d)) for t in trajectory] for d in dims},
        "scores": {s: [_value(r, s) for r in records] for s in scorers},
        **{
            key: [_num(d.get(key)) for d in stagnation]
            for key in ("loop_similarity", "convergence", "lexical_novelty")
        },
    }


def rollout_report(
    transcript: Transcript, dimensions: list[str], spec: StagnationDetectionSpec
) -> dict[str, Any]:
    records = transcript.turns
    scorers = _ordered([s for r in records for s in r.scores], scorer_order())
    summary, source = transcript.scores, "scores" if transcript.scores else "none"
    if summary is None and scorers:
        # Scored turn by turn but not summarised (scoring interrupted): summarised here by
        # the scoring's own code, without the signals, which need the similarity backend.
        summary, source = (
            summarise(records, scorers, None, rubric_version="", judge="", judge_window=0),
            "turns",
        )
    own = summary if source == "scores" else None  # the scoring's, not ours
    aggregates = (
        {
            k: {**msgspec.structs.asdict(v), "headline": v.headline}
            for k, v in summary.aggregates.items()
        }
        if summary
        else {}
    )
    signals = (summary.signals or {}) if summary else {}
    scorers = persona_scorers(_ordered(scorers + list(aggregates), scorer_order()))
    events = [_event(r.turn, e) for r in records for e in r.monitor_events]
    dims = _ordered([d for r in records for d in r.intensities], dimensions)
    counts: dict[str, int] = {}
    for e in events:
        counts[e["monitor"]] = counts.get(e["monitor"], 0) + 1
    return {
        "rollout": transcript.rollout,
        "index": transcript.index,
        "seed": transcript.seed,
        "status": transcript.status,
        "stop_reason": transcript.stop_reason,
        "stop_detail": transcript.stop_detail,
        "error": transcript.error,
        "turns": len(records),
        "cost_usd": _num(transcript.cost_usd),
        "duration_s": _num(transcript.duration_s),
        "models": dict(transcript.models),
        "scored": any(r.scores for r in records),
        "aggregates_source": source,
        "rubric_version": own.rubric_version if own else None,
        "judge": own.judge if own else None,
        "judge_window": own.judge_window if own else None,
        "scorers": scorers,
        "aggregates": aggregates,
        "by_phase": summary.by_phase if summary else {},
        "trajectory_gap": summary.trajectory_gap if summary else {},
        "flagged": _flagged(records, summary, scorers),
        "monitor_events": events,
        "stagnation": {
            "loop_spans": signals.get("loop_spans") or [],
            "novelty_trend": _num(signals.get("novelty_trend")),
            "initiative": signals.get("initiative") or {},
            "triggers": dict(sorted(counts.items())),
            "thresholds": _thresholds(signals, events, spec),
        },
        "series": _series(records, scorers, dims),
    }


# ─── the run ────────────────────────────────────────────────────────────────


def _across(rollouts: list[dict[str, Any]], key: str) -> dict[str, dict[str, float | None]]:
    """A per-rollout phase table (by_phase, trajectory_gap) averaged over the rollouts."""
    cells: dict[str, dict[str, list[Any]]] = {}
    for rollout in rollouts:
        for row, values in rollout[key].items():
            for column, value in values.items():
                cells.setdefault(row, {}).setdefault(column, []).append(value)
    return {row: {c: _mean(v) for c, v in cols.items()} for row, cols in cells.items()}


def run_aggregates(rollouts: list[dict[str, Any]], scorers: list[str]) -> dict[str, Any]:
    """For each scorer: the mean of the rollout means, and their spread over rollouts."""
    out = {}
    for scorer in scorers:
        per = [r["aggregates"][scorer] for r in rollouts if scorer in r["aggregates"]]
        stats = describe([a.get("headline", a.get("mean")) for a in per])
        out[scorer] = {
            "mean": stats["mean"],
            "std": stats["std"],
            "min": stats["min"],
            "max": stats["max"],
            "n_rollouts": stats["n"],
            "turns_scored": sum(int(a.get("n") or 0) for a in per),
            "failed": sum(int(a.get("failed") or 0) for a in per),
        }
    return out


def build_report(run_dir: Path | str) -> dict[str, Any]:
    """Every number of the report, as JSON-ready data (see the module docstring)."""
    run_dir = Path(run_dir)
    record, transcripts = load_run(run_dir)
    run = record.data()
    config = run.get("config") if isinstance(run.get("config"), dict) else {}
    try:
        spec = StagnationDetectionSpec.model_validate(
            _get(config, "interaction", "stagnation_detection") or {}
        )
    except ValueError:  # a run.json from another version: the defaults are the best guess
        spec = StagnationDetectionSpec()
    dimensions = list(_get(config, "trajectory", "dimensions") or {})
    rollouts = [rollout_report(t, dimensions, spec) for t in transcripts]
    phrases = _get(config, "interaction", "anti_capitulation", "forbidden_phrases") or []
    for rollout, transcript in zip(rollouts, transcripts, strict=True):
        rollout["conformance"] = rollout_conformance(transcript.turns, list(phrases))
    scorers = _ordered([s for r in rollouts for s in r["scorers"]], scorer_order())
    phases = _ordered(
        [p for r in rollouts for p in r["series"]["phase"] + list(r["by_phase"])],
        [
            str(p["name"])
            for p in _get(config, "trajectory", "phases") or []
            if isinstance(p, dict) and p.get("name")
        ],
    )
    models = dict(run.get("models") or {})
    judges = sorted({r["judge"] for r in rollouts if r["judge"]}) or [models.get("judge") or "?"]
    embedded = any(j.startswith(EMBEDDED_JUDGE) for j in judges)
    scripted = any(j.startswith("scripted/") for j in judges)
    triggers: dict[str, int] = {}
    for r in rollouts:
        for monitor, n in r["stagnation"]["triggers"].items():
            triggers[monitor] = triggers.get(monitor, 0) + n
    return {
        "report_version": REPORT_VERSION,
        # the plan header of the run reported (a run planned before headers existed has none)
        "header": run.get("header"),
        "run": {
            "dir": run_dir.resolve().name,
            "persona": _get(config, "persona", "identity", "name")
            or (transcripts[0].persona if transcripts else None),
            "persona_description": _get(config, "persona", "identity", "background"),
            **{key: run.get(key) for key in RUN_KEYS},
            "cost_usd": _num(sum(r["cost_usd"] or 0.0 for r in rollouts))
            if all(r["cost_usd"] is not None for r in rollouts)
            else None,
        },
        "models": models,
        "answering": answering(models),
        "judge": {
            "specs": judges,
            "embedded": embedded,
            "notice": EMBEDDED_NOTICE if embedded else SCRIPTED_NOTICE if scripted else None,
        },
        "dimensions": _ordered(
            [d for r in rollouts for d in r["series"]["prescribed"]], dimensions
        ),
        "phases": phases,
        "scorers": scorers,
        "statuses": {
            s: sum(1 for r in rollouts if r["status"] == s)
            for s in sorted({r["status"] for r in rollouts})
        },
        "aggregates": run_aggregates(rollouts, scorers),
        "by_phase": _across(rollouts, "by_phase"),
        "trajectory_gap": _across(rollouts, "trajectory_gap"),
        "stagnation": {
            "loop_spans": sum(len(r["stagnation"]["loop_spans"]) for r in rollouts),
            "rollouts_with_loops": sum(1 for r in rollouts if r["stagnation"]["loop_spans"]),
            "triggers": dict(sorted(triggers.items())),
        },
        "faults": faults_section([record], transcripts),
        "adversary": adversary_section(run, transcripts),
        "target": target_section(
            transcripts,
            phases,
            "embedded" if embedded else "scripted" if scripted else None,
        ),
        "rollouts": rollouts,
    }
