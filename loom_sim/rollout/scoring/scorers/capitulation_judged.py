"""Capitulation as a judge reads it: did the persona's message give in, in any words?

The ``capitulation`` scorer matches the words of giving in, free and deterministic; on persona
text nobody tuned it to it finds a concession said in other words rarely ("Okay, maybe I've
been reading too much into the commit times"), which docs/validity.md states. Where a run has a
judge model, this scorer asks it about each persona message
(:mod:`loom_sim.judging.capitulation`: the interlocutor's last reply for context, then the
message) and keeps both readings, so a reader sees where they differ:

* ``value`` is 0 when the judge says the persona gave in and quotes words the message holds,
  1 when it says not; a verdict without that evidence is a failed score, never a number;
* ``details`` hold the judge's quote, the words' check's verdict (``words``) and whether the
  two agree — a turn where only one of them saw a concession is the one to read.

Off by default (it costs a judge call a turn): ``evaluation.scoring.capitulation_judged.enabled:
true``. ``benchmarks/validity_loom.py --judge MODEL`` measures a judge model on the held-out
sets with this same request.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from loom_sim.config.spec import ScorerSettings
from loom_sim.judging import capitulation as protocol
from loom_sim.messages import WindowTurn
from loom_sim.plugins.scorers import scorer
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.rollout.scoring.base import Scorer, TurnView
from loom_sim.store.records import Score


class JudgedCapitulationSettings(ScorerSettings):
    enabled: bool = Field(False, description="Run this scorer (a judge call a turn).")


def persona_line(turn: TurnView) -> str:
    """Who the persona is, in one line the judge is told (its name and background)."""
    identity = turn.config.persona.identity
    return f"{identity.name}: {identity.background}".strip(": ")[:300]


def message_window(turn: TurnView) -> list[WindowTurn]:
    """The interlocutor's last reply before this message (as the entry before it), then the
    persona's message with no reply: the judge reads the message, not what it brought."""
    current = turn.record
    out = []
    if turn.index > 0:
        before = turn.records[turn.index - 1]
        out.append(WindowTurn(before.turn, before.persona, before.interlocutor))
    out.append(WindowTurn(current.turn, current.persona, ""))
    return out


@scorer(
    "capitulation_judged",
    needs_judge=True,
    order=46,
    kind="rate",
    settings=JudgedCapitulationSettings,
    summary="The judge's reading of whether the persona gave in, in any words, with a quote of "
    "the message as evidence; beside the words' check (off by default).",
)
class JudgedCapitulation(Scorer):
    async def score(self, turn: TurnView) -> Score:
        message = turn.record.persona
        phrases = turn.config.interaction.anti_capitulation.forbidden_phrases
        words = bool(CapitulationCheck(phrases).found(message)) if phrases else None
        request = protocol.request(turn.turn, message_window(turn), persona_line(turn))
        judgement = await turn.judge(
            request.rubric_id, request.rubric, request.schema, request.window
        )
        verdict = protocol.verdict(judgement, message)
        details: dict[str, Any] = {
            "quote": verdict.quote,
            "words": words,
            "rubric_version": protocol.RUBRIC_VERSION,
        }
        if verdict.gave_in is None:
            return Score(None, "judge", details, error=verdict.error)
        details["agrees_with_words"] = None if words is None else words == verdict.gave_in
        if verdict.gave_in:
            details["flag"] = f'capitulation (judge): "{verdict.quote}"'
        return Score(0.0 if verdict.gave_in else 1.0, "judge", details)
