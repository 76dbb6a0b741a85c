"""Stagnation: the post-hoc replay of the runtime monitor (loop similarity, convergence) and
lexical novelty, mixed with the judge's 1-5 reading of the persona's initiative."""

from __future__ import annotations

from typing import Any

from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.scoring.base import TurnRubricScorer, TurnView
from loom_sim.rollout.scoring.scorers._shared import mean, mixed
from loom_sim.store.records import Score


@scorer(
    "stagnation",
    needs_judge=True,
    order=40,
    summary="Agreement loops, novelty, initiative, convergence.",
)
class Stagnation(TurnRubricScorer):
    uses_signals = True

    async def score(self, turn: TurnView) -> Score:
        signals = turn.signals
        if signals is None:
            return Score(None, "deterministic", error="no signals for this turn")
        measures: dict[str, Any] = {
            "loop_similarity": signals.loop_similarity,
            "convergence": signals.convergence,
            "lexical_novelty": signals.lexical_novelty,
            "semantic_novelty": signals.semantic_novelty,
            "questions": signals.questions,
            "redirects": signals.redirects,
        }
        deterministic = mean(
            [
                1 - signals.loop_similarity if signals.loop_similarity is not None else None,
                1 - signals.convergence if signals.convergence is not None else None,
                signals.lexical_novelty,
            ]
        )
        return mixed(deterministic, await turn.turn_rubric(), "initiative", measures)
