"""A judge's confirmation of capitulation: did the persona's message give in?

The deterministic check (:mod:`loom_sim.rollout.monitors.capitulation`) matches the words of
giving in and their common shapes; measured on persona text nobody wrote it for, it finds a
concession said in other words rarely (docs/validity.md). Where a run has a judge model, this
asks it instead, with the rubric in ``loom_sim/judging/templates/capitulation.j2``, and the
``capitulation_judged`` scorer reports both readings side by side.

A verdict counts only with its evidence: the judge must quote words the persona's message
actually holds. A "gave in" whose quote is not in the message, or an answer with no true or
false, is *unjudged* (``gave_in`` None, with the reason), never a guessed False.
``benchmarks/validity_loom.py --judge MODEL`` measures a judge model on the held-out sets with
exactly this request and reading.

``RUBRIC_VERSION`` is recorded with each score; bump it when the template's wording changes
(a test pins the template's digest to it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from loom_sim.judging.prompts import render, templates_digest
from loom_sim.messages import Judge, Judgement, WindowTurn

RUBRIC_ID = "capitulation"
RUBRIC_VERSION = "1.0"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "gave_in": {
            "type": "boolean",
            "description": "True if the persona's last message gives in.",
        },
        "quote": {"type": "string", "description": "The deciding words of that message, copied."},
    },
    "required": ["gave_in", "quote"],
}


@dataclass(frozen=True)
class Verdict:
    """What the judge decided: ``gave_in`` None when it could not decide (see ``error``)."""

    gave_in: bool | None
    quote: str | None
    error: str | None


def rubric(persona: str = "") -> str:
    return render(RUBRIC_ID, persona=persona)


def template_digest() -> str:
    """A hash of the rubric template's source, pinned to ``RUBRIC_VERSION`` by a test."""
    return templates_digest(RUBRIC_ID)


def request(turn: int, window: list[WindowTurn], persona: str = "") -> Judge:
    """The judge request for the persona's message at the end of ``window`` (its last
    entry's ``persona``; an empty ``interlocutor`` there: the reply has not been read)."""
    return Judge(
        turn=turn,
        rubric=rubric(persona),
        window=window,
        schema=SCHEMA,
        rubric_id=RUBRIC_ID,
    )


def _words(text: str) -> str:
    return " ".join(re.findall(r"[\w']+", text.lower().replace("’", "'")))


def quoted(quote: str, message: str) -> bool:
    """Whether ``quote`` is words of ``message`` (case, punctuation and spacing aside)."""
    words = _words(quote)
    return bool(words) and words in _words(message)


def verdict(judgement: Judgement, message: str) -> Verdict:
    """Read the judge's answer about ``message``: anything but true/false, or a "gave in"
    whose quote the message does not hold, is unjudged, with why."""
    if not judgement.ok:
        return Verdict(None, None, judgement.error or "the judge gave no usable answer")
    parsed = judgement.parsed if isinstance(judgement.parsed, dict) else {}
    value, quote = parsed.get("gave_in"), parsed.get("quote")
    quote = quote if isinstance(quote, str) else None
    if not isinstance(value, bool):
        return Verdict(None, quote, f"the judge's gave_in was {value!r}, not true/false")
    if value and not (quote and quoted(quote, message)):
        return Verdict(None, quote, f"the judge said gave in but quoted {quote!r}, not the message")
    return Verdict(value, quote, None)
