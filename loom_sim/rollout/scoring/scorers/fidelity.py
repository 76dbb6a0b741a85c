"""Fidelity: did the persona's message follow the instructions it actually had? Asked on a
seeded sample of turns (``sample_rate``), as a part of the turn's joint judge call: the
instructions and the question come after the window, which the judge reads once for all parts.

The instructions are the ones in force
(:meth:`~loom_sim.rollout.scoring.base.TurnView.instructions`):
the MUST DO of the last full injection, and the reminder, emergency intervention or re-prompt
sent with the message — never a MUST DO rebuilt for the turn that the persona was not given.
The score keeps which prompt that was (the injecting turn and its hash)."""

from __future__ import annotations

from loom_sim.config.spec import SampledScorerSettings
from loom_sim.judging.rubrics import FIDELITY_SCHEMA, fidelity_rubric, likert
from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.scoring.base import JointPart, Scorer, TurnView
from loom_sim.rollout.scoring.scorers._shared import judge_failed
from loom_sim.store.records import Score


@scorer(
    "fidelity",
    needs_judge=True,
    order=50,
    settings=SampledScorerSettings,
    summary="Did the persona follow its MUST DO block?",
)
class Fidelity(Scorer):
    def joint(self, turn: TurnView) -> JointPart:
        def build() -> JointPart:
            told = turn.instructions()
            rubric = fidelity_rubric(turn.turn, told.must_do, told.since, told.notes)
            return JointPart("fidelity", rubric, FIDELITY_SCHEMA)

        return turn.part("fidelity", build)

    async def score(self, turn: TurnView) -> Score:
        told = turn.instructions()
        judgement = await turn.joint_answer(self.joint(turn))
        error = judge_failed(judgement)
        if error:
            return Score(None, "judge", {"instructions": told.summary()}, error=error)
        answer = judgement.parsed
        value = likert(answer.get("followed"))
        details = {
            "instructions": told.summary(),
            "judge": answer.get("followed"),
            "violated": list(answer.get("violated") or []),
            "reason": answer.get("reason", ""),
        }
        return Score(value, "judge", details, None if value is not None else "no 1-5 score given")
