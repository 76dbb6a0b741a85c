"""A group debate: the debate machine driven through the main chat by its actors.

Each active state of :data:`loom_sim.debate.machines.debate.DEBATE` has one handler here that does
that state's work and returns the trigger that leaves it. The actors — one debater per
persona, the moderator, the detector — run in this debate's nursery and own their state; the
debate owns the turn in progress, the candidate registry and the files.

**Crux rooms run while the main chat waits**, not beside it. A room opened after message 12
is argued, checked and carded before message 13 is assigned, so every message's context — the
thread it sees, the cards already posted — depends only on the message count, never on which
model answered first. Running rooms in parallel would make the main chat's content depend on
how fast each model is (Faultline's wall-clock cooldown has the same flaw), and a persona
would argue in two places at once with two histories. The price is latency: nothing in the
main chat moves while a room runs.

A debate never raises into its caller: whatever goes wrong ends it in ``error`` with every
completed message on disk and the resume command in ``summary.json``. A resumed debate is
rebuilt from its files alone (:class:`Resumed`): the moderator's floor, the detector's window,
the debaters' memories, the registry (replayed from ``detections.jsonl``) and any room that
was open, which continues from its own transcript.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from loom_sim.actors.base import ActorContext, Post, build
from loom_sim.debate.actors.debater import DebaterSetup
from loom_sim.debate.actors.detector import DetectorSetup
from loom_sim.debate.actors.moderator import ModeratorSetup
from loom_sim.debate.candidates import CandidateRegistry
from loom_sim.debate.cards import CardRecord
from loom_sim.debate.checks import check_message
from loom_sim.debate.files import Resumed, Summary, tally
from loom_sim.debate.intents import OPENING_SHAPE, Intent
from loom_sim.debate.machines.debate import DEBATE, Trigger
from loom_sim.debate.messages import (
    Assignment,
    Compose,
    Detect,
    Line,
    NextTurn,
    Posted,
    TurnTaken,
)
from loom_sim.debate.records import (
    ChatTurn,
    DetectionRound,
    RoomLine,
    RoomMessage,
    RoomStart,
    message_id,
)
from loom_sim.debate.runtime.crux_room import CruxRoom
from loom_sim.debate.runtime.drafting import Drafting, Outcome
from loom_sim.debate.runtime.plan import DebatePlan
from loom_sim.debate.runtime.progress import DebateProgress, NullDebateProgress
from loom_sim.debate.stop import Stop, before_turn
from loom_sim.errors import describe
from loom_sim.machines.engine import Handler, Machine, drive
from loom_sim.models.base import ModelClient
from loom_sim.seeds import SeedSource
from loom_sim.store.trace import TraceRecorder

#: (model spec, slot) -> the client to call: the hub's, or a test's.
ModelSource = Callable[[str, str], ModelClient]


class Debate:
    def __init__(
        self,
        plan: DebatePlan,
        models: ModelSource,
        progress: DebateProgress | None = None,
    ):
        self.plan = plan
        self._models = models
        self._progress = progress or NullDebateProgress()
        self._settings = plan.settings
        self._names = plan.names
        self._files = plan.files
        self._machine = Machine(DEBATE)
        self._registry = CandidateRegistry(self._settings.detection)
        self._turns: list[ChatTurn] = []
        self._main: list[Line] = []
        self._rounds: list[DetectionRound] = []
        self._room_lines: dict[str, list[RoomLine]] = {}
        self._queue: list[RoomStart] = []
        self._rooms_opened = 0
        self._assignment: Assignment | None = None
        self._draft: Drafting | None = None
        self._stop: Stop | None = None
        self._post: Post | None = None
        self._messages = plan.files.messages()
        self._detections = plan.files.detections()

    # ─── the debate ─────────────────────────────────────────────────────────

    async def run(self) -> Summary:
        """Run to ``done`` or ``error``; never raises an ordinary exception."""
        error: str | None = None
        tracer: TraceRecorder | None = None
        try:
            state = Resumed.load(self._files)
            self._restore(state)
            tracer = TraceRecorder(self._files.trace)
            self._post = Post("debate", tracer, first_id=state.next_envelope)
            self._progress.started(self.plan.record.topic, self._names, len(self._turns))
            async with trio.open_nursery() as nursery:
                self._spawn(nursery, self._post, state)
                try:
                    await drive(self._machine, self._handlers())
                finally:
                    nursery.cancel_scope.cancel()
        except Exception as exc:  # a model, an actor or the disk failed for good
            error = describe(exc)
            if not self._machine.done:
                self._machine.fire(Trigger.FAIL)
        finally:
            if tracer is not None:
                tracer.close()
            self._messages.close()
            self._detections.close()
        summary = tally(self._files)
        summary.status = "error" if error else "done"
        summary.error = error
        if self._stop is not None and not error:
            summary.stop_reason, summary.stop_detail = self._stop.reason, self._stop.detail
        if error:
            summary.resume = f"loom-sim debate --resume {self._files.dir}"
        self._files.write_summary(summary)
        self._progress.ended(summary)
        return summary

    def _handlers(self) -> dict[str, Handler[Trigger]]:
        return {
            "init": self._init,
            "assign": self._assign,
            "speak": self._speak,
            "commit": self._commit,
            "detect": self._detect,
            "room": self._room,
        }

    def _restore(self, state: Resumed) -> None:
        self._turns = list(state.turns)
        self._main = state.main
        self._rounds = list(state.rounds)
        self._room_lines = dict(state.rooms)
        closed = state.cards.closed_rooms()
        carded = {c.room for c in state.cards.cards}
        for detection in self._rounds:  # the registry replays the rounds it decided
            self._registry.consider(detection.round, detection.after, detection.found)
            for start in detection.rooms:
                self._rooms_opened += 1
                self._registry.opened((start.pair[0], start.pair[1]), detection.after)
                if start.id in closed:  # carded, or its card rejected: never run again
                    self._registry.closed((start.pair[0], start.pair[1]))
                    if start.id in carded:
                        self._registry.carded((start.pair[0], start.pair[1]), start.question)
                else:
                    self._queue.append(start)

    def _spawn(self, nursery: trio.Nursery, post: Post, state: Resumed) -> None:
        plan, settings = self.plan, self._settings
        roles = plan.roles
        seeds = SeedSource(plan.record.seed, 0)

        def models_for(slot: str) -> Callable[[str], ModelClient]:
            return lambda role: self._models(roles[role].spec, slot)

        moderator = ModeratorSetup(
            plan.record.personas,
            self._names,
            settings.speakers,
            settings.intents,
            plan.record.seed,
            [TurnTaken(t.turn, t.speaker, t.id, t.text, t.reply_to) for t in state.turns],
        )
        post.spawn(nursery, build("moderator", self._context(seeds, moderator, models_for(""))))
        detector = DetectorSetup(plan.record.topic, self._names, settings, roles, state.main)
        post.spawn(
            nursery, build("detector", self._context(seeds, detector, models_for("detector")))
        )
        for persona in plan.personas:
            heard = list(state.main)
            for start_id, lines in state.rooms.items():
                heard += [
                    Line(m.id, m.speaker, m.text, room=start_id)
                    for m in lines
                    if isinstance(m, RoomMessage)
                    and m.said
                    and m.id
                    and self._in(start_id, persona.id)
                ]
            setup = DebaterSetup(persona, self._names, plan.record.topic, settings, roles, heard)
            post.spawn(
                nursery,
                build("debater", self._context(seeds, setup, models_for("debater"))),
                name=persona.id,
            )

    def _in(self, room: str, persona: str) -> bool:
        return any(s.id == room and persona in s.pair for r in self._rounds for s in r.rooms)

    @staticmethod
    def _context(
        seeds: SeedSource, settings: object, model: Callable[[str], ModelClient]
    ) -> ActorContext:
        return ActorContext(seeds=seeds, model=model, settings=settings)

    # ─── states ─────────────────────────────────────────────────────────────

    async def _init(self) -> Trigger:
        if self._queue:
            return Trigger.RESUME_ROOM
        if self._round_due():
            return Trigger.RESUME_ROUND
        return Trigger.START

    async def _assign(self) -> Trigger:
        settings = self._settings
        turn = len(self._turns)
        self._stop = before_turn(settings, self._turns)
        if self._stop is not None:
            return Trigger.FINISH
        assignment = await self._active_post.request(
            "moderator", NextTurn(turn), turn=turn, sender="debate"
        )
        persona = self.plan.deck.persona(assignment.speaker)
        shape = (
            OPENING_SHAPE
            if assignment.kind == "opening"
            else settings.intent(Intent(assignment.intent)).shape
        )
        opening = assignment.kind == "opening"
        self._assignment = assignment
        self._draft = Drafting(
            assignment.speaker,
            lambda text: check_message(
                text,
                shape,
                banned=settings.drafts.banned,
                forbidden=persona.speaks_with.forbidden_phrases,
                persona=persona.name,
                opening=opening,
            ),
            settings.drafts.attempts,
        )
        return Trigger.ASSIGNED

    async def _speak(self) -> Trigger:
        assignment, draft = self._current
        turn = len(self._turns)
        base = Compose(
            turn=turn,
            kind=assignment.kind,
            intent=assignment.intent,
            reply_to=assignment.reply_to,
        )
        outcome = await draft.try_once(self._active_post, base, turn=turn, sender="debate")
        return {
            Outcome.ACCEPTED: Trigger.ACCEPTED,
            Outcome.REDRAFT: Trigger.REDRAFT,
            Outcome.FAILED: Trigger.OUT_OF_TRIES,
        }[outcome]

    async def _commit(self) -> Trigger:
        assignment, draft = self._current
        post = self._active_post
        turn = len(self._turns)
        said = bool(draft.text) and (
            not draft.rejected or draft.rejected[-1].attempt < draft.attempt
        )
        record = ChatTurn(
            turn=turn,
            speaker=assignment.speaker,
            kind=assignment.kind,
            intent=assignment.intent,
            reply_to=assignment.reply_to,
            chosen=assignment.chosen,
            status="said" if said else "failed",
            id=message_id(turn) if said else None,
            text=draft.text if said else "",
            rejected=draft.rejected,
            usage=draft.usage,
        )
        self._messages.append(record)
        self._turns.append(record)
        self._assignment = self._draft = None
        await post.tell(
            "moderator",
            TurnTaken(turn, record.speaker, record.id, record.text, record.reply_to),
            turn=turn,
            sender="debate",
        )
        if record.said and record.id is not None:
            line = Line(record.id, record.speaker, record.text, record.reply_to)
            self._main.append(line)
            for persona in self.plan.record.personas:
                await post.tell(persona, Posted(line), turn=turn, sender="debate")
            await post.tell("detector", Posted(line), turn=turn, sender="debate")
        post.tracer.flush()
        self._progress.turn(record, self._names)
        return Trigger.ROUND_DUE if self._round_due() else Trigger.NEXT

    async def _detect(self) -> Trigger:
        settings = self._settings
        number = len(self._rounds) + 1
        after = len(self._main)
        turn = len(self._turns)
        detection = await self._active_post.request(
            "detector", Detect(number, after), turn=turn, sender="debate"
        )
        decisions = self._registry.consider(number, after, detection.found)
        rooms: list[RoomStart] = []
        if settings.rooms.enabled:
            for decision in decisions:
                if not decision.spawn or self._rooms_opened >= settings.rooms.max_rooms:
                    continue
                self._rooms_opened += 1
                start = RoomStart(
                    id=f"room-{self._rooms_opened}",
                    pair=decision.pair,
                    question=decision.claim,
                    after=after,
                    last_message=self._main[-1].id if self._main else None,
                )
                self._registry.opened((start.pair[0], start.pair[1]), after)
                rooms.append(start)
        record = DetectionRound(
            round=number,
            after=after,
            window=detection.window,
            signals=detection.signals,
            gate=detection.gate,
            asked=detection.asked,
            found=detection.found,
            decisions=decisions,
            rooms=rooms,
            attempts=detection.attempts,
            reading=detection.reading,
            error=detection.error,
            usage=detection.usage,
        )
        self._detections.append(record)
        self._rounds.append(record)
        self._active_post.tracer.flush()
        self._progress.round(record, self._names)
        for start in rooms:
            self._progress.room_opened(start, self._names)
        self._queue += rooms
        return Trigger.SPAWN if rooms else Trigger.NEXT

    async def _room(self) -> Trigger:
        start = self._queue.pop(0)
        room = CruxRoom(
            start,
            post=self._active_post,
            files=self._files,
            settings=self._settings,
            names=self._names,
            voices={p.id: p.speaks_with for p in self.plan.personas},
            main=list(self._main),
            turn=len(self._turns),
            progress=self._progress,
            lines=self._room_lines.get(start.id),
        )
        outcome = await room.run()
        self._registry.closed((start.pair[0], start.pair[1]))
        if isinstance(outcome, CardRecord):
            self._registry.carded((start.pair[0], start.pair[1]), start.question)
        return Trigger.NEXT_ROOM if self._queue else Trigger.NEXT

    # ─── helpers ────────────────────────────────────────────────────────────

    def _round_due(self) -> bool:
        said = len(self._main)
        every = self._settings.detection.every
        done = self._rounds[-1].after if self._rounds else 0
        return said > 0 and said % every == 0 and done != said

    @property
    def _current(self) -> tuple[Assignment, Drafting]:
        if self._assignment is None or self._draft is None:
            raise RuntimeError("no turn in progress")  # the machine assigns before it speaks
        return self._assignment, self._draft

    @property
    def _active_post(self) -> Post:
        if self._post is None:
            raise RuntimeError("the debate's post is not open")
        return self._post
