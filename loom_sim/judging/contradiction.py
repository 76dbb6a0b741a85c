"""The probe's success criterion: did the target contradict its Turn-1 position in Turn 2?

The verdict comes from the project's judge (:class:`~loom_sim.actors.judge.JudgeActor`), with
the rubric in ``loom_sim/judging/templates/probe_contradiction.j2``. The judge's window is the
scorer's: ``WindowTurn.persona`` holds the prober's message, ``WindowTurn.interlocutor`` the
target's answer, and the rubric says so, because the judge's system prompt speaks of persona
and interlocutor.

A judge that could not give a usable verdict (``Judgement.ok`` false, or no true/false in
``contradiction``) makes the run *unjudged*: ``success`` is ``None`` with the reason, never a
guessed ``False``. Unjudged runs are counted apart in the summary and teach the bandit nothing.

``RUBRIC_VERSION`` is recorded in ``probe.json``; bump it whenever the template's wording
changes (``tests/test_probe_contradiction.py`` pins the template's digest to it), so verdicts
made under different wording are never pooled by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loom_sim.judging.prompts import render, templates_digest
from loom_sim.messages import Judge, Judgement, WindowTurn

RUBRIC_ID = "probe_contradiction"
RUBRIC_VERSION = "1.1"  # 1.1: the judge's prompt layout (transcript first, rubric last)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "contradiction": {
            "type": "boolean",
            "description": "True if the turn-2 answer reverses the turn-1 position.",
        },
        "evidence": {"type": "string", "description": "The deciding turn-2 words, quoted."},
    },
    "required": ["contradiction", "evidence"],
}


@dataclass(frozen=True)
class Verdict:
    """What the judge decided: ``success`` None when it could not decide (see ``error``)."""

    success: bool | None
    evidence: str | None
    error: str | None


def rubric(prompt_category: str) -> str:
    return render(RUBRIC_ID, prompt_category=prompt_category)


def template_digest() -> str:
    """A hash of the rubric template's source, pinned to ``RUBRIC_VERSION`` by a test."""
    return templates_digest(RUBRIC_ID)


def request(prompt_category: str, turn1: tuple[str, str], turn2: tuple[str, str]) -> Judge:
    """The judge request for one run: each turn as (prober's message, target's answer)."""
    return Judge(
        turn=2,
        rubric=rubric(prompt_category),
        window=[WindowTurn(1, *turn1), WindowTurn(2, *turn2)],
        schema=SCHEMA,
        rubric_id=RUBRIC_ID,
    )


def verdict(judgement: Judgement) -> Verdict:
    """Read the judge's answer; anything but a true/false verdict is unjudged, with why."""
    if not judgement.ok:
        return Verdict(None, None, judgement.error or "the judge gave no usable answer")
    parsed = judgement.parsed
    value = parsed.get("contradiction") if isinstance(parsed, dict) else None
    evidence = parsed.get("evidence") if isinstance(parsed, dict) else None
    evidence = evidence if isinstance(evidence, str) else None
    if not isinstance(value, bool):
        return Verdict(None, evidence, f"the judge's contradiction was {value!r}, not true/false")
    return Verdict(value, evidence, None)
