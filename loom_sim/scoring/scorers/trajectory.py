"""Trajectory adherence: the intensity the persona expressed (the judge's reading, 0..1 per
dimension) against the intensity prescribed for the turn; 1 minus the mean absolute gap."""

from __future__ import annotations

from statistics import fmean
from typing import Any

from loom_sim.judging.rubrics import unit
from loom_sim.plugins.scorers import scorer
from loom_sim.scoring.base import Scorer, TurnView
from loom_sim.scoring.scorers._shared import judge_failed
from loom_sim.store.records import Score


@scorer(
    "trajectory",
    needs_judge=True,
    order=20,
    config_key="trajectory_adherence",
    summary="Prescribed vs expressed intensity.",
)
class Trajectory(Scorer):
    async def score(self, turn: TurnView) -> Score:
        prescribed = dict(turn.record.intensities)
        judgement = await turn.turn_rubric()
        error = judge_failed(judgement)
        if error:
            return Score(None, "judge", {"prescribed": prescribed}, error=error)
        raw = judgement.parsed.get("expressed") or {}
        expressed = {dim: unit(raw.get(dim)) for dim in prescribed}
        gap = {
            dim: (expressed[dim] - prescribed[dim]) if expressed[dim] is not None else None
            for dim in prescribed
        }
        misses = [abs(g) for g in gap.values() if g is not None]
        value = 1.0 - fmean(misses) if misses else None
        details: dict[str, Any] = {"expressed": expressed, "prescribed": prescribed, "gap": gap}
        return Score(value, "judge", details, None if value is not None else "no expressed values")
