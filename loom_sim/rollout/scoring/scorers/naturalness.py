"""Naturalness: variety over the last ``judge_window`` turns (distinct n-grams, MTLD, openings
and endings) and the absence of formulae, mixed with the judge's 1-5 reading.

Formulae are found post hoc by the repetition guard's own check (the config's banned and
structural patterns, or loom-sim's defaults when it names none), over every persona message
up to the turn: a runtime guard that was off, or a transcript imported from another tool, is
checked all the same. The deterministic part is the mean of the variety measures and the
share of the window's messages that are not formulaic, so a persona that ends every turn with
the same question scores low however varied its words."""

from __future__ import annotations

from typing import Any

from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.monitors.repetition import formulaic_turns, post_hoc_spec
from loom_sim.rollout.scoring.base import TurnRubricScorer, TurnView
from loom_sim.rollout.scoring.measures import distinct_n, ending_variety, mtld, opening_variety
from loom_sim.rollout.scoring.scorers._shared import mean, mixed
from loom_sim.store.records import Score

MTLD_GOOD = 80.0  # MTLD of varied conversational prose; counts as full marks


@scorer(
    "naturalness",
    needs_judge=True,
    order=30,
    summary="Variety; no formulaic or robotic output.",
)
class Naturalness(TurnRubricScorer):
    async def score(self, turn: TurnView) -> Score:
        window = turn.recent
        texts = [r.persona for r in window]
        spec = post_hoc_spec(turn.config.interaction.repetition_detection)
        found = formulaic_turns([r.persona for r in turn.records[: turn.index + 1]], spec)
        flagged = [
            r.turn for r, findings in zip(window, found[-len(window) :], strict=True) if findings
        ]
        measures: dict[str, Any] = {
            "distinct_1": distinct_n(texts, 1),
            "distinct_2": distinct_n(texts, 2),
            "mtld": mtld(texts),
            "opening_variety": opening_variety(texts),
            "ending_variety": ending_variety(texts),
            "formulaic_events": sum(
                1 for r in window for e in r.monitor_events if e.monitor == "repetition"
            ),
            "formulaic": [f.pattern for f in found[-1]],  # this turn's message
            "formulaic_turns": flagged,  # the window's formulaic messages
        }
        lexical = measures["mtld"]
        variety = mean(
            [
                measures["distinct_2"],
                min(1.0, lexical / MTLD_GOOD) if lexical is not None else None,
                measures["opening_variety"],
                measures["ending_variety"],
            ]
        )
        measures["variety"] = variety
        measures["formula_free"] = 1.0 - len(flagged) / len(window) if window else None
        deterministic = mean([variety, measures["formula_free"]])
        return mixed(deterministic, await turn.turn_rubric(), "naturalness", measures)
