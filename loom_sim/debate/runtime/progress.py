"""What a debate reports as it goes: the protocol the command line's live view implements.

The debate calls these as things happen (a turn committed, a round run, a room opened, a
room message, a card); the terminal view (``loom_sim/cli/debate.py``) prints them, tests
collect them, and the default does nothing.
"""

from __future__ import annotations

from typing import Protocol

from loom_sim.debate.cards import CardRecord, RejectedCard
from loom_sim.debate.files import Summary
from loom_sim.debate.records import ChatTurn, DetectionRound, RoomLine, RoomStart


class DebateProgress(Protocol):
    def started(self, topic: str, names: dict[str, str], resumed_at: int) -> None: ...

    def turn(self, turn: ChatTurn, names: dict[str, str]) -> None: ...

    def round(self, detection: DetectionRound, names: dict[str, str]) -> None: ...

    def room_opened(self, start: RoomStart, names: dict[str, str]) -> None: ...

    def room_line(self, start: RoomStart, line: RoomLine, names: dict[str, str]) -> None: ...

    def carded(self, outcome: CardRecord | RejectedCard) -> None: ...

    def ended(self, summary: Summary) -> None: ...


class NullDebateProgress:
    def started(self, topic: str, names: dict[str, str], resumed_at: int) -> None:
        pass

    def turn(self, turn: ChatTurn, names: dict[str, str]) -> None:
        pass

    def round(self, detection: DetectionRound, names: dict[str, str]) -> None:
        pass

    def room_opened(self, start: RoomStart, names: dict[str, str]) -> None:
        pass

    def room_line(self, start: RoomStart, line: RoomLine, names: dict[str, str]) -> None:
        pass

    def carded(self, outcome: CardRecord | RejectedCard) -> None:
        pass

    def ended(self, summary: Summary) -> None:
        pass
