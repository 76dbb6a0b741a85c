"""Trajectory adherence: the intensity the persona expressed (the judge's reading, 0..1 per
dimension) against the intensity it was told; 1 minus the mean absolute gap.

"Told" is what the prompt in force said (the last full injection's HOW block, updated by a
reminder that names the dimension), which lags the schedule between injections; judging a
message against a value the persona never saw would blame it for the injection schedule. The
gap to the schedule itself is kept beside (``schedule_gap``) for the report's summary of how
far the conversation followed the curve."""

from __future__ import annotations

from statistics import fmean
from typing import Any

from loom_sim.judging.rubrics import unit
from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.scoring.base import TurnRubricScorer, TurnView
from loom_sim.rollout.scoring.scorers._shared import judge_failed
from loom_sim.store.records import Score


@scorer(
    "trajectory",
    needs_judge=True,
    order=20,
    config_key="trajectory_adherence",
    summary="Prescribed vs expressed intensity.",
)
class Trajectory(TurnRubricScorer):
    async def score(self, turn: TurnView) -> Score:
        scheduled = dict(turn.record.intensities)
        told = turn.instructions()
        prescribed = {dim: told.told.get(dim, value) for dim, value in scheduled.items()}
        base: dict[str, Any] = {
            "prescribed": prescribed,
            "scheduled": scheduled,
            "instructions": told.summary(),
        }
        judgement = await turn.turn_rubric()
        error = judge_failed(judgement)
        if error:
            return Score(None, "judge", base, error=error)
        raw = judgement.parsed.get("expressed") or {}
        expressed = {dim: unit(raw.get(dim)) for dim in prescribed}
        gap = _gaps(expressed, prescribed)
        misses = [abs(g) for g in gap.values() if g is not None]
        value = 1.0 - fmean(misses) if misses else None
        details = {
            **base,
            "expressed": expressed,
            "gap": gap,
            "schedule_gap": _gaps(expressed, scheduled),
        }
        return Score(value, "judge", details, None if value is not None else "no expressed values")


def _gaps(expressed: dict[str, float | None], target: dict[str, float]) -> dict[str, float | None]:
    return {
        dim: (value - target[dim]) if value is not None else None
        for dim, value in expressed.items()
    }
