"""What a debate writes, line by line: the main chat, the detection rounds, the rooms.

No record holds a time or a latency (those are in the trace): with scripted models and a fixed
seed, two debates write byte-identical ``messages.jsonl``, ``detections.jsonl`` and
``cards.json``, which is how determinism is tested.

Message ids are what cards cite: ``m7`` is the main chat's turn 7; ``room-1.3`` is message 3
of room 1 (0 and 1 are its opening statements).
"""

from __future__ import annotations

import msgspec

from loom_sim.debate.candidates import Decision
from loom_sim.debate.messages import Disagreement, PairSignal
from loom_sim.models.base import Usage


class Rejected(msgspec.Struct, frozen=True):
    """A draft that failed its checks, and why; the next attempt was shown the reasons."""

    attempt: int
    text: str
    reasons: list[str]


class ChatTurn(msgspec.Struct, frozen=True, kw_only=True):
    """One main-chat turn: a message said, or a turn that failed (never silently skipped)."""

    turn: int
    speaker: str
    kind: str  # opening | turn
    intent: str  # CLARIFY, ASK ... ("" for openings)
    reply_to: str | None
    chosen: str  # why the moderator chose this speaker
    status: str  # said | failed
    id: str | None = None  # m<turn> when said
    text: str = ""
    rejected: list[Rejected] = msgspec.field(default_factory=list)
    error: str | None = None  # a failed turn's reason when it was not its checks
    usage: Usage = msgspec.field(default_factory=Usage)

    @property
    def said(self) -> bool:
        return self.status == "said"


def message_id(turn: int) -> str:
    return f"m{turn}"


def room_message_id(room: str, n: int) -> str:
    return f"{room}.{n}"


class RoomStart(msgspec.Struct, frozen=True, kw_only=True):
    """A room a detection round opened: who, on what, after which message."""

    id: str  # room-1, room-2 ...
    pair: list[str]
    question: str
    after: int  # main-chat messages said when it opened
    last_message: str | None  # the main chat's last message id before it opened


class DetectionRound(msgspec.Struct, frozen=True, kw_only=True):
    """One detection round: the window, the cheap signals, what the model said, the
    registry's decisions, and the rooms opened."""

    round: int  # 1, 2 ...
    after: int  # main-chat messages said when it ran
    window: list[str]  # message ids read
    signals: list[PairSignal]  # per pair, its strongest signal in the window
    gate: float  # the strongest opposition, compared with the gate
    asked: bool  # whether the detector model was asked
    found: list[Disagreement] = msgspec.field(default_factory=list)
    decisions: list[Decision] = msgspec.field(default_factory=list)
    rooms: list[RoomStart] = msgspec.field(default_factory=list)
    attempts: int = 0
    reading: str | None = None
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)


class RoomMessage(msgspec.Struct, frozen=True, kw_only=True, tag="message"):
    n: int  # 0, 1: opening statements; 2.. exchanges
    speaker: str
    kind: str  # room_opening | room_turn
    status: str  # said | failed
    id: str | None = None
    text: str = ""
    rejected: list[Rejected] = msgspec.field(default_factory=list)
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)

    @property
    def said(self) -> bool:
        return self.status == "said"


class ExitCheck(msgspec.Struct, frozen=True, kw_only=True, tag="exit_check"):
    after: int  # exchanges so far
    surfaced: bool
    how: str = ""  # both_named | changed_mind | irreducible | ""
    reason: str = ""
    ok: bool = True  # False: the check's answer was unusable (the room goes on)
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)


RoomLine = RoomMessage | ExitCheck
