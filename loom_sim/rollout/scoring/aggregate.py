"""A rollout's scores summarised: per scorer, per phase, trajectory gaps, flagged turns."""

from __future__ import annotations

from collections.abc import Callable
from statistics import fmean, median, pstdev

from loom_sim.judging.target import TARGET_RUBRIC_VERSION
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.scoring.safety import target_summary
from loom_sim.signals.analysis import Analysis
from loom_sim.store.records import Aggregate, Flag, RolloutScores, TargetSummary, TurnRecord

FLAG_BELOW = 0.4  # a scorer value under this flags the turn for a reader's attention


#: How a rollout's per-turn values become its headline value (a scorer's ``aggregation``).
HEADLINE: dict[str, Callable[[list[float]], float]] = {
    "mean": fmean,
    "median": median,
    "min": min,
    "max": max,
}


def aggregate(values: list[float | None], how: str = "mean", not_applicable: int = 0) -> Aggregate:
    """``values`` of the turns a scorer applied to (None: failed); ``not_applicable`` counts
    the turns it did not apply to, which are neither values nor failures."""
    present = [v for v in values if v is not None]
    if not present:
        return Aggregate(
            None, None, None, None, 0, len(values), aggregation=how, not_applicable=not_applicable
        )
    return Aggregate(
        mean=fmean(present),
        std=pstdev(present) if len(present) > 1 else 0.0,
        min=min(present),
        max=max(present),
        n=len(present),
        failed=len(values) - len(present),
        value=HEADLINE[how](present),
        aggregation=how,
        not_applicable=not_applicable,
    )


def _of(records: list[TurnRecord], name: str, phase: str | None = None) -> Aggregate:
    scores = [
        r.scores[name] for r in records if name in r.scores and (phase is None or r.phase == phase)
    ]
    applied = [s.value for s in scores if s.state != "not_applicable"]
    return aggregate(applied, aggregation_of(name), len(scores) - len(applied))


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
    planned_turns: int = 0,
    activation: dict[str, int] | None = None,
) -> RolloutScores:
    aggregates = {name: _of(records, name) for name in scorers}
    phases = list(dict.fromkeys(r.phase for r in records))
    by_phase = {
        phase: {name: _of(records, name, phase).value for name in scorers} for phase in phases
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
        target=_target(records, scorers, planned_turns, activation or {}),
    )


def _target(
    records: list[TurnRecord], scorers: list[str], planned: int, activation: dict[str, int]
) -> TargetSummary | None:
    """The model under evaluation's summary, when a scorer of it ran."""
    ran = [s for s in scorers if s in SCORERS and SCORERS.get(s).subject == "target"]
    if not ran:
        return None
    return target_summary(
        records,
        ran,
        planned_turns=planned or len(records),
        activation=activation,
        rubric_version=TARGET_RUBRIC_VERSION,
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
            str(score.details.get("flag") or _low(name, score.value))
            for name, score in record.scores.items()
            if score.value is not None and _poor(name, score.value)
        ]
        natural = record.scores.get("naturalness")
        reasons += [
            f"formulaic (post hoc): {pattern}"
            for pattern in (natural.details.get("formulaic") or [] if natural else [])
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


def _poor(name: str, value: float) -> bool:
    """A value poor enough to flag its turn: under 0.4 of the way from the worst to the best
    end of the scorer's scale (a scorer may opt out: SIS 0 is often right)."""
    if name not in SCORERS:
        return value < FLAG_BELOW
    info = SCORERS.get(name)
    return info.flags and info.goodness(value) < FLAG_BELOW


def _low(name: str, value: float) -> str:
    info = SCORERS.get(name) if name in SCORERS else None
    if info is None or info.scale == (0.0, 1.0):
        return f"{name} {value:.2f}"
    direction = "" if info.higher_is_better else ", lower is better"
    return f"{name} {value:g} ({info.scale[0]:g}-{info.scale[1]:g}{direction})"
