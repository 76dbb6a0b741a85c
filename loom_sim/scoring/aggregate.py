"""A rollout's scores summarised: per scorer, per phase, trajectory gaps, flagged turns."""

from __future__ import annotations

from collections.abc import Callable
from statistics import fmean, median, pstdev

from loom_sim.plugins.scorers import SCORERS
from loom_sim.signals.analysis import Analysis
from loom_sim.store.records import Aggregate, Flag, RolloutScores, TurnRecord

FLAG_BELOW = 0.4  # a scorer value under this flags the turn for a reader's attention


#: How a rollout's per-turn values become its headline value (a scorer's ``aggregation``).
HEADLINE: dict[str, Callable[[list[float]], float]] = {
    "mean": fmean,
    "median": median,
    "min": min,
    "max": max,
}


def aggregate(values: list[float | None], how: str = "mean") -> Aggregate:
    present = [v for v in values if v is not None]
    if not present:
        return Aggregate(None, None, None, None, 0, len(values), aggregation=how)
    return Aggregate(
        mean=fmean(present),
        std=pstdev(present) if len(present) > 1 else 0.0,
        min=min(present),
        max=max(present),
        n=len(present),
        failed=len(values) - len(present),
        value=HEADLINE[how](present),
        aggregation=how,
    )


def aggregation_of(scorer: str) -> str:
    """The registered scorer's aggregation (``mean`` for one no longer registered)."""
    return SCORERS.get(scorer).aggregation if scorer in SCORERS else "mean"


def summarise(
    records: list[TurnRecord],
    scorers: list[str],
    analysis: Analysis | None,
    *,
    rubric_version: str,
    judge: str,
    judge_window: int,
) -> RolloutScores:
    aggregates = {
        name: aggregate(
            [r.scores[name].value for r in records if name in r.scores], aggregation_of(name)
        )
        for name in scorers
    }
    phases = list(dict.fromkeys(r.phase for r in records))
    by_phase = {
        phase: {
            name: aggregate(
                [r.scores[name].value for r in records if r.phase == phase and name in r.scores],
                aggregation_of(name),
            ).value
            for name in scorers
        }
        for phase in phases
    }
    trajectory_gap: dict[str, dict[str, float | None]] = {}
    for phase in phases:
        gaps: dict[str, list[float]] = {}
        for record in records:
            score = record.scores.get("trajectory")
            if record.phase != phase or score is None:
                continue
            for dim, gap in (score.details.get("gap") or {}).items():
                if gap is not None:
                    gaps.setdefault(dim, []).append(gap)
        dims = list(records[0].intensities) if records else []
        trajectory_gap[phase] = {d: fmean(gaps[d]) if gaps.get(d) else None for d in dims}
    return RolloutScores(
        rubric_version=rubric_version,
        judge=judge,
        judge_window=judge_window,
        aggregates=aggregates,
        by_phase=by_phase,
        trajectory_gap=trajectory_gap,
        signals=_signals(analysis),
        flagged=_flags(records),
    )


def _signals(analysis: Analysis | None) -> dict:
    if analysis is None:
        return {}
    return {
        "backend": analysis.backend,
        "loop_spans": [[s.start, s.end, round(s.peak, 4)] for s in analysis.loop_spans],
        "convergence_spans": [
            [s.start, s.end, round(s.peak, 4)] for s in analysis.convergence_spans
        ],
        "novelty_trend": round(analysis.novelty_trend, 6),
        "initiative": {k: round(v, 6) for k, v in analysis.initiative.items()},
        "loop_threshold": analysis.loop_threshold,
        "convergence_threshold": analysis.convergence_threshold,
    }


def _flags(records: list[TurnRecord]) -> list[Flag]:
    flags = []
    for record in records:
        reasons = [
            # a scorer may word its own reason (the capitulation scorer names the phrase)
            str(score.details.get("flag") or f"{name} {score.value:.2f}")
            for name, score in record.scores.items()
            if score.value is not None and score.value < FLAG_BELOW
        ]
        reasons += [
            f"{e.monitor}: {e.pattern} ({e.action})"
            for e in record.monitor_events
            if e.action in ("emergency_injection", "accepted_after_retries")
        ]
        reasons += [
            f"{name} not scored: {score.error}"
            for name, score in record.scores.items()
            if score.error
        ]
        if reasons:
            flags.append(Flag(record.turn, list(dict.fromkeys(reasons))))
    return flags
