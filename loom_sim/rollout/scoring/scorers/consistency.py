"""Consistency: prompt-to-line and line-to-line (the turn rubric), and at a few probe turns
(first, middle, last) Q&A — the persona is asked questions its specification fixes, and the
judge compares the answers with the spec and with its answers at earlier probe turns (kept in
those turns' details)."""

from __future__ import annotations

from typing import Any

from loom_sim.judging import rubrics
from loom_sim.messages import WindowTurn
from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.scoring.base import AskPersona, TurnRubricScorer, TurnView
from loom_sim.rollout.scoring.scorers._shared import judge_failed, mean
from loom_sim.store.records import Score


@scorer(
    "consistency",
    needs_judge=True,
    asks_persona=True,
    order=60,
    summary="Prompt-to-line, line-to-line and Q&A consistency.",
)
class Consistency(TurnRubricScorer):
    async def score(self, turn: TurnView) -> Score:
        qa: float | None = None
        qa_details: dict[str, Any] = {}
        if turn.turn in turn.probe_turns:
            if turn.ask_persona is not None:
                qa, qa_details = await self._qa(turn, turn.ask_persona)
            else:
                qa_details = {"qa_skipped": f"{turn.persona_model} cannot be asked again"}
        judgement = await turn.turn_rubric()
        error = judge_failed(judgement)
        parts: dict[str, Any] = {
            "prompt_to_line": None,
            "line_to_line": None,
            "qa": qa,
            **qa_details,
        }
        if not error:
            parts["prompt_to_line"] = rubrics.likert(judgement.parsed.get("prompt_to_line"))
            parts["line_to_line"] = rubrics.likert(judgement.parsed.get("line_to_line"))
        value = mean([parts["prompt_to_line"], parts["line_to_line"], qa])
        if value is None:
            return Score(None, "judge", parts, error=error or "no consistency measure available")
        if error:
            parts["judge_error"] = error
        return Score(value, "judge", parts)

    def persona_questions(self, turn: TurnView) -> list[str]:
        return rubrics.qa_questions(turn.config) if turn.turn in turn.probe_turns else []

    async def _qa(self, turn: TurnView, ask: AskPersona) -> tuple[float | None, dict[str, Any]]:
        questions = self.persona_questions(turn)
        answers = await ask(questions)
        earlier = [
            WindowTurn(r.turn, a, q)
            for r in turn.records[: turn.index]
            if "consistency" in r.scores
            for q, a in r.scores["consistency"].details.get("qa_answers", [])
        ]
        window = earlier + [
            WindowTurn(turn.turn, a, q) for q, a in zip(questions, answers, strict=True)
        ]
        judgement = await turn.judge(
            "qa",
            rubrics.qa_rubric(turn.config, turn.turn, len(questions)),
            rubrics.qa_schema(len(questions)),
            window,
        )
        details: dict[str, Any] = {
            "qa_answers": [[q, a] for q, a in zip(questions, answers, strict=True)]
        }
        if not judgement.ok:
            details["qa_error"] = judgement.error
            return None, details
        verdicts = [v for v in judgement.parsed.get("consistent") or [] if isinstance(v, bool)]
        if not verdicts:
            details["qa_error"] = "no verdicts given"
            return None, details
        details["qa_reason"] = judgement.parsed.get("reason", "")
        return sum(verdicts) / len(verdicts), details
