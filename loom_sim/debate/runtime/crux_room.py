"""One crux room: two personas, one disputed claim, driven through the crux-room machine.

The room's handlers (one per active state of :data:`loom_sim.debate.machines.crux_room.CRUX_ROOM`)
draft and check each message with the room's shape, ask the detector for the exit check on
the room's cadence (counted in exchanges), and end with the card. Every message, said or
failed, and every exit check is appended to ``rooms/<id>/transcript.jsonl`` as it happens; a
resumed room starts in the state its transcript says it stopped in and goes on from there.

Speakers alternate: message 0 and 1 are the openings (the pair's first persona, then the
second); exchange ``k`` (message ``k + 1``) is the reply of whoever did not speak last.
"""

from __future__ import annotations

from loom_sim.actors.base import Post
from loom_sim.debate.cards import CardRecord, RejectedCard
from loom_sim.debate.checks import Shape, check_message
from loom_sim.debate.files import DebateFiles
from loom_sim.debate.machines.crux_room import CRUX_ROOM, Trigger
from loom_sim.debate.messages import (
    CheckExit,
    Compose,
    ExtractCard,
    Line,
    Posted,
)
from loom_sim.debate.records import ExitCheck, RoomLine, RoomMessage, RoomStart, room_message_id
from loom_sim.debate.runtime.drafting import Drafting, Outcome
from loom_sim.debate.runtime.progress import DebateProgress
from loom_sim.debate.settings import DebateSettings
from loom_sim.debate.voice import VoiceProfile
from loom_sim.machines.engine import Machine, drive

OPENINGS = 2


class CruxRoom:
    def __init__(
        self,
        start: RoomStart,
        *,
        post: Post,
        files: DebateFiles,
        settings: DebateSettings,
        names: dict[str, str],
        voices: dict[str, VoiceProfile],
        main: list[Line],
        turn: int,
        progress: DebateProgress,
        lines: list[RoomLine] | None = None,
    ):
        self.start = start
        self._post = post
        self._files = files
        self._settings = settings
        self._rooms = settings.rooms
        self._names = names
        self._voices = voices
        self._main = main
        self._turn = turn
        self._progress = progress
        self._log = files.room(start.id)
        self._lines: list[RoomLine] = list(lines or [])
        self._draft: Drafting | None = None
        self._outcome: CardRecord | RejectedCard | None = None

    # ─── where it stands ────────────────────────────────────────────────────

    @property
    def _messages(self) -> list[RoomMessage]:
        return [x for x in self._lines if isinstance(x, RoomMessage)]

    @property
    def _said(self) -> list[Line]:
        return [
            Line(m.id, m.speaker, m.text, room=self.start.id)
            for m in self._messages
            if m.said and m.id is not None
        ]

    @property
    def _exchanges(self) -> int:
        return max(0, len(self._messages) - OPENINGS)

    def _state(self) -> str:
        """Where a (resumed) room stands, read from its transcript."""
        if len(self._messages) < OPENINGS:
            return "open"
        if self._exchanges >= self._rooms.max_exchanges:
            return "extract"
        last = self._lines[-1]
        if isinstance(last, ExitCheck):
            return "extract" if last.surfaced else "exchange"
        if self._rooms.exit_check_due(self._exchanges):
            return "check"
        return "exchange"

    # ─── the room ───────────────────────────────────────────────────────────

    async def run(self) -> CardRecord | RejectedCard:
        try:
            await drive(
                Machine(CRUX_ROOM, initial=self._state()),
                {
                    "open": self._open,
                    "exchange": self._exchange,
                    "check": self._check,
                    "extract": self._extract,
                },
            )
        finally:
            self._log.close()
        assert self._outcome is not None  # the machine only closes through extract
        return self._outcome

    async def _open(self) -> Trigger:
        outcome = await self._speak("room_opening", self._rooms.opening_shape)
        if outcome is Outcome.REDRAFT:
            return Trigger.REDRAFT
        return Trigger.OPENED if len(self._messages) == OPENINGS else Trigger.NEXT_OPENING

    async def _exchange(self) -> Trigger:
        outcome = await self._speak("room_turn", self._rooms.shape)
        if outcome is Outcome.REDRAFT:
            return Trigger.REDRAFT
        if self._exchanges >= self._rooms.max_exchanges:
            return Trigger.CAPPED
        if self._rooms.exit_check_due(self._exchanges):
            return Trigger.CHECK_DUE
        return Trigger.SPOKE

    async def _check(self) -> Trigger:
        verdict = await self._post.request(
            "detector",
            CheckExit(
                room=self.start.id,
                question=self.start.question,
                pair=self.start.pair,
                lines=self._said,
                after=self._exchanges,
            ),
            turn=self._turn,
            sender=self.start.id,
        )
        check = ExitCheck(
            after=self._exchanges,
            surfaced=verdict.surfaced,
            how=verdict.how,
            reason=verdict.reason,
            ok=verdict.ok,
            error=verdict.error,
            usage=verdict.usage,
        )
        self._record(check)
        return Trigger.SURFACED if verdict.surfaced else Trigger.GO_ON

    async def _extract(self) -> Trigger:
        start = self.start
        pair = set(start.pair)
        context = [line for line in self._main if line.speaker in pair]
        answer = await self._post.request(
            "detector",
            ExtractCard(
                room=start.id,
                question=start.question,
                pair=start.pair,
                lines=self._said,
                context=context[-self._rooms.context :] if self._rooms.context else [],
            ),
            turn=self._turn,
            sender=start.id,
        )
        cards = self._files.cards()
        outcome: CardRecord | RejectedCard
        if answer.ok and answer.card is not None:
            outcome = CardRecord(
                id=f"card-{len(cards.cards) + 1}",
                room=start.id,
                pair=start.pair,
                question=start.question,
                card=answer.card,
                attempts=answer.attempts,
                reading=answer.reading,
                usage=answer.usage,
                uncertain=answer.uncertain,
                type_reading=answer.type_reading,
            )
            cards.cards.append(outcome)
        else:
            outcome = RejectedCard(
                room=start.id,
                pair=start.pair,
                question=start.question,
                problems=answer.problems,
                raw=answer.raw,
                usage=answer.usage,
            )
            cards.rejected.append(outcome)
        self._files.write_cards(cards)
        self._outcome = outcome
        self._progress.carded(outcome)
        return Trigger.CARDED

    # ─── helpers ────────────────────────────────────────────────────────────

    async def _speak(self, kind: str, shape: Shape) -> Outcome:
        n = len(self._messages)
        speaker = self.start.pair[n % 2]
        opponent = self.start.pair[(n + 1) % 2]
        if self._draft is None:
            voice = self._voices[speaker]
            name = self._names.get(speaker, speaker)
            self._draft = Drafting(
                speaker,
                lambda text: check_message(
                    text,
                    shape,
                    banned=self._settings.drafts.banned,
                    forbidden=voice.forbidden_phrases,
                    persona=name,
                ),
                self._settings.drafts.attempts,
            )
        draft = self._draft
        base = Compose(
            turn=self._turn,
            kind=kind,
            room=self.start.id,
            question=self.start.question,
            opponent=opponent,
        )
        outcome = await draft.try_once(self._post, base, turn=self._turn, sender=self.start.id)
        if outcome is Outcome.REDRAFT:
            return outcome
        said = draft.accepted
        message = RoomMessage(
            n=n,
            speaker=speaker,
            kind=kind,
            status="said" if said else "failed",
            id=room_message_id(self.start.id, n) if said else None,
            text=draft.text if said else "",
            rejected=draft.rejected,
            usage=draft.usage,
        )
        self._draft = None
        self._record(message)
        if said and message.id is not None:
            line = Line(message.id, speaker, message.text, room=self.start.id)
            for persona in self.start.pair:
                await self._post.tell(persona, Posted(line), turn=self._turn, sender=self.start.id)
        return outcome

    def _record(self, line: RoomLine) -> None:
        self._log.append(line)
        self._lines.append(line)
        self._post.tracer.flush()
        self._progress.room_line(self.start, line, self._names)
