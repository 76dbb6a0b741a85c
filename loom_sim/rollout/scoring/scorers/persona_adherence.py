"""Persona adherence: identity, capability bounds, speech patterns, the phase's boundaries —
the judge's 1-5 reading of the turn rubric."""

from __future__ import annotations

from loom_sim.judging.rubrics import likert
from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.scoring.base import TurnRubricScorer, TurnView
from loom_sim.rollout.scoring.scorers._shared import judge_failed
from loom_sim.store.records import Score


@scorer(
    "persona_adherence",
    needs_judge=True,
    order=10,
    summary="Identity, capability bounds, speech, boundaries.",
)
class PersonaAdherence(TurnRubricScorer):
    async def score(self, turn: TurnView) -> Score:
        judgement = await turn.turn_rubric()
        error = judge_failed(judgement)
        if error:
            return Score(None, "judge", error=error)
        answer = judgement.parsed
        value = likert(answer.get("persona_adherence"))
        details = {"judge": answer.get("persona_adherence"), "reason": answer.get("reason", "")}
        return Score(value, "judge", details, None if value is not None else "no 1-5 score given")
