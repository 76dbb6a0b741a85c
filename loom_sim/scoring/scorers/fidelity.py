"""Fidelity: did the persona's message follow that turn's MUST DO block? A judge call of its
own, on a seeded sample of turns (``sample_rate``)."""

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
        plan = turn.plan()
        must_do = plan.prompt.must_do if plan.prompt is not None else ""
        judgement = await turn.judge(
            "fidelity", fidelity_rubric(record.turn, must_do), FIDELITY_SCHEMA
        )
        error = judge_failed(judgement)
        if error:
            return Score(None, "judge", error=error)
        answer = judgement.parsed
        value = likert(answer.get("followed"))
        details = {
            "judge": answer.get("followed"),
            "violated": list(answer.get("violated") or []),
            "reason": answer.get("reason", ""),
        }
        return Score(value, "judge", details, None if value is not None else "no 1-5 score given")
