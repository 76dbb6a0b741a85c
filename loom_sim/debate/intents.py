"""Turn intents: what each message in the main chat is for, and how that is checked.

Each intent is an instruction for the debater *and* a :class:`~loom_sim.debate.checks.Shape`
its message must have — Faultline assigns intents by coin flips and never looks at what was
said; here an ASK that does not end with a question is regenerated with that reason.

Who gets which intent is a rule given as data (:class:`IntentRule`): by default —
the first three messages after the openings CLARIFY, then a 30 % chance of ASK, half of the
rest EVIDENCE, else DISAGREE — drawn from a ``random.Random`` seeded with (debate seed, turn),
so a resumed debate assigns the intents an uninterrupted one would have.
"""

from __future__ import annotations

import random
from enum import StrEnum

from pydantic import Field

from loom_sim.debate.checks import Shape
from loom_sim.debate.contract import Prose, Strict
from loom_sim.seeds import derive_seed


class Intent(StrEnum):
    AGREE = "AGREE"
    DISAGREE = "DISAGREE"
    ASK = "ASK"
    CLARIFY = "CLARIFY"
    EVIDENCE = "EVIDENCE"
    REFRAME = "REFRAME"


class IntentSpec(Strict):
    instruction: Prose = Field(description="What the debater is told to do this turn.")
    shape: Shape = Field(default_factory=Shape, description="What the message must look like.")


#: The default instructions, each with the shape that makes it checkable.
INTENTS: dict[Intent, IntentSpec] = {
    Intent.AGREE: IntentSpec(
        instruction="Support their point. One sentence.", shape=Shape(opens="agreeing")
    ),
    Intent.DISAGREE: IntentSpec(
        instruction="Challenge their point. One sentence.", shape=Shape(opens="challenging")
    ),
    Intent.ASK: IntentSpec(
        instruction="Ask a pointed question. One sentence, ends with ?",
        shape=Shape(question="required"),
    ),
    Intent.CLARIFY: IntentSpec(
        instruction="State your position. One sentence.", shape=Shape(question="forbidden")
    ),
    Intent.EVIDENCE: IntentSpec(
        instruction="Bring a specific example or data point. One sentence.",
        shape=Shape(question="forbidden", specific=True),
    ),
    Intent.REFRAME: IntentSpec(
        instruction="Shift how they're thinking about it. One sentence.", shape=Shape()
    ),
}

#: Opening statements and crux-room messages are not intents but have shapes of their own.
OPENING_SHAPE = Shape(sentences=(2, 4), max_words=120)
ROOM_OPENING_SHAPE = Shape(sentences=(2, 4), max_words=120)
ROOM_SHAPE = Shape(sentences=(2, 3), max_words=100)


class IntentDraw(Strict):
    intent: Intent = Field(strict=False)
    chance: float = Field(ge=0.0, le=1.0, description="Chance of this intent, of what is left.")


class IntentRule(Strict):
    """Which intent a conversation turn gets (openings are not counted)."""

    first: int = Field(
        3, ge=0, le=1000, description="The first turns after the openings get `first_intent`."
    )
    first_intent: Intent = Field(Intent.CLARIFY, strict=False)
    draws: list[IntentDraw] = Field(
        default_factory=lambda: [
            IntentDraw(intent=Intent.ASK, chance=0.3),
            IntentDraw(intent=Intent.EVIDENCE, chance=0.5),
        ],
        description="Tried in order: each wins with its chance, else the next is tried.",
    )
    otherwise: Intent = Field(Intent.DISAGREE, strict=False)

    def assign(self, seed: int, turn: int, conversation_index: int) -> Intent:
        """The intent of main-chat ``turn``, the ``conversation_index``-th after the openings."""
        if conversation_index < self.first:
            return self.first_intent
        rng = random.Random(derive_seed(seed, "intent", turn))
        for draw in self.draws:
            if rng.random() < draw.chance:
                return draw.intent
        return self.otherwise
