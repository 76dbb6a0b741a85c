"""The debate's prompts, assembled from versioned templates (``templates/*.j2``).

A debater's system prompt has three layers: the **contract** (who they are,
what they believe and would change their mind for, their anchor quotes), the **voice** (style,
patterns, words, forbidden phrases, examples) and **tone calibration** (a short generic chat
showing the register); in a crux room the room's mode is appended. Each turn's user prompt
carries the recent thread, the message replied to, the intent's instruction and a length
guide derived from the shape the message will be checked against, so what the model is asked
and what is checked never drift apart.

The detector, the exit check and the card writer read transcripts fenced as data
(:func:`~loom_sim.judging.fence.fence_lines`): debaters write them, and nothing a debater says
may instruct the model reading it.

``DEBATE_TEMPLATE_VERSION`` is recorded with every debate; ``tests/test_debate_golden.py``
fails when the templates change without a bump.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loom_sim.assembler.rendering import TemplateSet
from loom_sim.debate.checks import Shape
from loom_sim.debate.deck import PersonaEntry
from loom_sim.debate.intents import IntentSpec
from loom_sim.judging.fence import fence_lines, markers

# 1.1: every data field (names, handles, sources, evidence items, questions) flattened
DEBATE_TEMPLATE_VERSION = "1.1"
TEMPLATES = TemplateSet("loom_sim.debate", DEBATE_TEMPLATE_VERSION)
render = TEMPLATES.render


@dataclass(frozen=True)
class Said:
    """A message as a prompt shows it."""

    id: str
    speaker: str  # persona id
    name: str
    text: str


@dataclass(frozen=True)
class RoomFrame:
    """What a debater in a crux room is told about it."""

    question: str
    opponent: str  # the other persona's name
    shape: Shape


def length_guide(shape: Shape) -> str:
    least, most = shape.sentences
    if most == 1:
        return "One sentence."
    return f"{least}-{most} sentences." if least != most else f"{least} sentences."


def system_prompt(persona: PersonaEntry, room: RoomFrame | None = None) -> str:
    layers = [
        render("contract", name=persona.name, handle=persona.handle, c=persona.contract),
        render("voice", name=persona.name, v=persona.speaks_with),
        render("tone"),
    ]
    if room is not None:
        length = length_guide(room.shape).rstrip(".") + " MAX"
        layers.append(
            render("room_mode", opponent=room.opponent, question=room.question, length=length)
        )
    return "\n\n".join(layers)


def opening_prompt(topic: str, persona: PersonaEntry, shape: Shape) -> str:
    return render(
        "opening",
        topic=topic,
        style=persona.speaks_with.chat_style_hint,
        length=length_guide(shape),
    )


def turn_prompt(
    topic: str, persona: PersonaEntry, thread: Sequence[Said], target: Said, spec: IntentSpec
) -> str:
    return render(
        "turn",
        topic=topic,
        thread=thread,
        target=target,
        style=persona.speaks_with.chat_style_hint,
        instruction=spec.instruction,
        length=length_guide(spec.shape),
    )


def room_opening_prompt(question: str, context: Sequence[Said], shape: Shape) -> str:
    return render("room_opening", question=question, context=context, length=length_guide(shape))


def room_turn_prompt(
    question: str, history: Sequence[Said], opponent: str, last: str, shape: Shape
) -> str:
    return render(
        "room_turn",
        question=question,
        history=history,
        opponent=opponent,
        last=last,
        length=length_guide(shape),
    )


def redraft_note(name: str, reasons: Sequence[str]) -> str:
    return render("redraft", name=name, reasons=list(reasons))


# ─── the analyst's prompts: detection, exit check, card ─────────────────────


def transcript(lines: Sequence[Said], nonce: str) -> str:
    return fence_lines([f"[{s.id}] {s.name} ({s.speaker}): {s.text}" for s in lines], nonce)


def analyst_system(task: str, nonce: str, schema: dict[str, Any]) -> str:
    begin, end = markers(nonce)
    return render("analyst_system", task=task, begin=begin, end=end, schema=json.dumps(schema))


def detection_prompt(
    topic: str, people: Sequence[tuple[str, str]], lines: Sequence[Said], nonce: str
) -> str:
    return render("detect", topic=topic, people=people, transcript=transcript(lines, nonce))


def exit_prompt(pair: str, question: str, lines: Sequence[Said], nonce: str) -> str:
    return render("exit_check", pair=pair, question=question, transcript=transcript(lines, nonce))


def card_prompt(
    question: str, people: Sequence[tuple[str, str]], lines: Sequence[Said], nonce: str
) -> str:
    return render("card", question=question, people=people, transcript=transcript(lines, nonce))
