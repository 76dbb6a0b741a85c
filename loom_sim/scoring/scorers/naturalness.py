"""Naturalness: variety over the judge's window (distinct n-grams, MTLD, openings and endings)
mixed with the judge's 1-5 reading; formulaic events are counted alongside."""

from __future__ import annotations

from typing import Any

from loom_sim.plugins.scorers import scorer
from loom_sim.scoring.base import Scorer, TurnView
from loom_sim.scoring.measures import distinct_n, ending_variety, mtld, opening_variety
from loom_sim.scoring.scorers._shared import mean, mixed
from loom_sim.store.records import Score

MTLD_GOOD = 80.0  # MTLD of varied conversational prose; counts as full marks


@scorer(
    "naturalness",
    needs_judge=True,
    order=30,
    summary="Variety; no formulaic or robotic output.",
)
class Naturalness(Scorer):
    async def score(self, turn: TurnView) -> Score:
        window = turn.window
        texts = [r.persona for r in window]
        measures: dict[str, Any] = {
            "distinct_1": distinct_n(texts, 1),
            "distinct_2": distinct_n(texts, 2),
            "mtld": mtld(texts),
            "opening_variety": opening_variety(texts),
            "ending_variety": ending_variety(texts),
            "formulaic_events": sum(
                1 for r in window for e in r.monitor_events if e.monitor == "repetition"
            ),
        }
        lexical = measures["mtld"]
        deterministic = mean(
            [
                measures["distinct_2"],
                min(1.0, lexical / MTLD_GOOD) if lexical is not None else None,
                measures["opening_variety"],
                measures["ending_variety"],
            ]
        )
        return mixed(deterministic, await turn.turn_rubric(), "naturalness", measures)
