"""Fidelity: did the persona's message follow the instructions it actually had? A judge call
of its own, on a seeded sample of turns (``sample_rate``).

The instructions are the ones in force (:meth:`~loom_sim.scoring.base.TurnView.instructions`):
the MUST DO of the last full injection, and the reminder, emergency intervention or re-prompt
sent with the message — never a MUST DO rebuilt for the turn that the persona was not given.
The score keeps which prompt that was (the injecting turn and its hash)."""

from __future__ import annotations

from loom_sim.config.spec import SampledScorerSettings
from loom_sim.judging.rubrics import FIDELITY_SCHEMA, fidelity_rubric, likert
from loom_sim.plugins.scorers import scorer
from loom_sim.scoring.base import Scorer, TurnView
from loom_sim.scoring.scorers._shared import judge_failed
from loom_sim.store.records import Score


@scorer(
    "fidelity",
    needs_judge=True,
    order=50,
    settings=SampledScorerSettings,
    summary="Did the persona follow its MUST DO block?",
)
class Fidelity(Scorer):
    async def score(self, turn: TurnView) -> Score:
        record = turn.record
        told = turn.instructions()
        judgement = await turn.judge(
            "fidelity",
            fidelity_rubric(record.turn, told.must_do, told.since, told.notes),
            FIDELITY_SCHEMA,
        )
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
