"""What a debate's actors say: debaters' lines, the moderator's turns, the detector's
disagreements, crux rooms' exit checks and cards."""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.core.messages import Body, Request, Tell
from loom_sim.messages import Utterance
from loom_sim.models.base import Usage

# ─── debate ─────────────────────────────────────────────────────────────────


class Line(msgspec.Struct, frozen=True):
    """A said debate message, as actors see it: ``m7`` in the main chat, ``room-1.3`` in a
    crux room."""

    id: str
    speaker: str  # persona id
    text: str
    reply_to: str | None = None
    room: str | None = None


class Posted(Tell, frozen=True):
    """To debaters and the detector: this message was said."""

    line: Line

    def summary(self) -> str:
        text = f"{self.line.id}: {self.line.text}"
        return text


class Compose(Request[Utterance], frozen=True):
    """Debater: write your next message — an opening, a main-chat turn with an intent, or a
    crux-room message. ``redraft`` holds why the last draft was refused, when it was."""

    turn: int  # the main chat's turn (a room's: the turn it opened after)
    kind: str  # opening | turn | room_opening | room_turn
    attempt: int = 0
    intent: str = ""
    reply_to: str | None = None
    room: str | None = None
    question: str = ""  # a room's disputed claim
    opponent: str = ""  # a room's other persona (id)
    draft: str = ""  # the refused draft
    redraft: list[str] = msgspec.field(default_factory=list)  # why it was refused

    def summary(self) -> str:
        why = f", redraft: {'; '.join(self.redraft)}" if self.redraft else ""
        text = f"{self.kind} {self.intent} attempt {self.attempt}{why}"
        return text


class Assignment(Body, frozen=True):
    """The moderator's decision: who speaks, in what kind of turn, to do what."""

    speaker: str
    kind: str  # opening | turn
    intent: str  # "" for openings
    reply_to: str | None
    chosen: str  # why this speaker

    def summary(self) -> str:
        text = f"{self.speaker} {self.kind} {self.intent} ({self.chosen})"
        return text


class NextTurn(Request[Assignment], frozen=True):
    """Moderator: who has main-chat turn ``turn``?"""

    turn: int


class TurnTaken(Tell, frozen=True):
    """To the moderator: turn ``turn`` was taken by ``speaker`` (``said`` is its message id,
    None when the turn failed)."""

    turn: int
    speaker: str
    said: str | None = None
    text: str = ""
    reply_to: str | None = None


class PairSignal(msgspec.Struct, frozen=True):
    """How strongly two personas' latest claims oppose each other, and why."""

    pair: list[str]  # sorted persona ids
    opposition: float
    similarity: float
    contrast: str  # contrary_reply | opposite_sides | contrast_words | none | same_side
    messages: list[str]  # the later claim's id, the earlier claim's id
    # The learned pair check over the window (MiniLM runs only; None without the model):
    # its probability that the two oppose, its verdict, and whether it lies near its threshold
    learned: float | None = None
    opposed: bool | None = None
    uncertain: bool = False

    @property
    def counts(self) -> bool:
        """Whether the learned check reads the pair as opposed (the gate opens for it)."""
        return self.opposed is True


class Disagreement(msgspec.Struct, frozen=True, kw_only=True):
    """A disagreement the detector model reported, and whether the signals bear it out."""

    pair: list[str]  # sorted persona ids
    claim: str
    confidence: float
    opposition: float = 0.0  # the pair's strongest cheap signal in the window
    # opposition reached the corroboration threshold, or the learned check read the pair as
    # opposed: it counts
    corroborated: bool = False


class Detection(Body, frozen=True, kw_only=True):
    window: list[str]  # the message ids read
    signals: list[PairSignal]  # per pair, its strongest signal in the window
    gate: float  # the strongest opposition of all
    asked: bool  # whether the detector model was asked (the gate was reached)
    found: list[Disagreement] = msgspec.field(default_factory=list)
    attempts: int = 0
    reading: str | None = None
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)

    def summary(self) -> str:
        found = ", ".join(f"{'/'.join(d.pair)} {d.confidence:.2f}" for d in self.found)
        text = f"gate {self.gate:.2f}, " + (
            f"asked: {found or 'none'}" if self.asked else "not asked"
        )
        return text


class Detect(Request[Detection], frozen=True):
    """Detector: read the window ending at the latest message; any disagreements?"""

    round: int
    after: int  # main-chat messages said so far


class ExitVerdict(Body, frozen=True, kw_only=True):
    ok: bool
    surfaced: bool = False
    how: str = ""
    reason: str = ""
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)

    def summary(self) -> str:
        text = f"surfaced ({self.how})" if self.surfaced else self.error or "not surfaced"
        return text


class CheckExit(Request[ExitVerdict], frozen=True):
    """Detector: has this crux room surfaced its crux?"""

    room: str
    question: str
    pair: list[str]
    lines: list[Line]
    after: int  # exchanges so far


class CardAnswer(Body, frozen=True, kw_only=True):
    ok: bool
    card: dict[str, Any] | None = None
    uncertain: dict[str, float] = msgspec.field(default_factory=dict)  # see CardRecord
    type_reading: dict[str, Any] | None = None  # see CardRecord
    raw: str = ""
    problems: list[str] = msgspec.field(default_factory=list)
    attempts: int = 0
    reading: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)

    def summary(self) -> str:
        text = "card" if self.ok else "no card: " + "; ".join(self.problems[-1:])
        return text


class ExtractCard(Request[CardAnswer], frozen=True):
    """Detector: write the crux card of this room (``context``: the pair's main-chat messages
    that led to it; every line may be cited)."""

    room: str
    question: str
    pair: list[str]
    lines: list[Line]
    context: list[Line] = msgspec.field(default_factory=list)
