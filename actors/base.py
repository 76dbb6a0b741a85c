"""Actors on trio: one inbox each, typed request/reply, failures re-raised as their own type.

An actor is a trio task that owns a receive channel and its own state; nothing else touches
that state. Its loop takes one envelope at a time, so its state needs no locks. A handler that
raises does not kill the actor: the exception travels back to the requester, which re-raises
it as the same object of the same type (a note says which actor raised it), so the rollout
that owns both catches ``BadModelReply`` as ``BadModelReply`` and decides what it means. The
trace records a :class:`~loom_sim.messages.Failure` for readers. Nobody waits forever on a dead
actor: actors run in their owner's nursery, so a crashed loop cancels the owner instead of
hanging it.

Every actor kind is built from an :class:`ActorContext` through the registry
(:data:`loom_sim.plugins.actors.ACTORS`): rollouts, scoring and the probe alike.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

import trio

from loom_sim.config.spec import LoomConfig
from loom_sim.core.reply import ReplySlot
from loom_sim.errors import LoomError, bounded
from loom_sim.messages import Body, Envelope, Failure, Heard, Judge, Judgement, Request, Tell
from loom_sim.models.base import ModelClient
from loom_sim.plugins.actors import ACTORS
from loom_sim.redaction import redact
from loom_sim.seeds import SeedSource
from loom_sim.store.records import TurnRecord
from loom_sim.store.trace import TraceRecorder

if TYPE_CHECKING:
    from loom_sim.actors.embedder import Embedder

R = TypeVar("R", bound=Body)
Reply = Body | Exception


# (envelope, where the reply goes, or None for a tell)
Delivery = tuple[Envelope, ReplySlot[Reply] | None]
JudgeLine = Callable[[Judge], Awaitable[Judgement]]  # how an actor asks its owner's judge


class ProtocolError(LoomError):
    """An actor answered a request with the wrong type, or not at all: a bug in that actor."""


@dataclass(frozen=True)
class ActorContext:
    """What an actor is built from: its owner's view of the simulation it takes part in.

    A rollout fills every field; scoring and the probe only what their actors need (the
    probe's judge has no persona config). A kind that needs a field its owner did not give
    says so when it is built.
    """

    seeds: SeedSource
    model: Callable[[str], ModelClient]  # model role -> the client to call
    config: LoomConfig | None = None
    interlocutor_system: str = ""
    opening: str | None = None  # the interlocutor's opening line, when it opened
    scaffolding: str = ""  # the persona's last full scaffolding (a resumed rollout's)
    records: list[TurnRecord] = field(default_factory=list)  # a resumed rollout's turns
    turns: int | None = None  # the rollout's length
    settings: Any = None  # a responder's settings, as recorded in run.json
    judge: JudgeLine | None = None  # how to ask the owner's judge actor
    max_tokens: int | None = None  # a cap on replies below the config's (scoring's Q&A)
    grammar: str | None = None  # the shape of the persona's replies (scoring's Q&A: 1-2 sentences)
    embedder: Embedder | None = None  # the run's embedding service (the monitor's vectors)

    @property
    def past(self) -> list[Heard]:
        return [Heard(r.turn, r.persona, r.interlocutor) for r in self.records]

    def need_config(self, kind: str) -> LoomConfig:
        if self.config is None:
            raise ProtocolError(f"the {kind} actor needs a persona config; none was given")
        return self.config


class Actor(ABC):
    """Base of every actor: subclasses implement :meth:`handle`, one message at a time."""

    role: ClassVar[str] = "actor"
    #: Its tells only take note (they wait on nothing): one sent while the actor is idle is
    #: handled in the sender's task, as an idle actor's request is (see :class:`Desk`).
    quick_tells: ClassVar[bool] = False

    @abstractmethod
    async def handle(self, body: Body) -> Body | None:
        """Answer a request (return the reply) or absorb a tell (return None)."""

    async def serve(self, inbox: trio.MemoryReceiveChannel[Delivery], name: str) -> None:
        desk = self._desk = self._desk or Desk()
        desk.serving = True
        try:
            async with inbox:
                async for envelope, reply in inbox:
                    while desk.lent:  # an asker's task is handling a request for this actor
                        desk.returned = trio.Event()
                        await desk.returned.wait()
                    result = await self.answer(envelope.body, name)
                    desk.pending = max(desk.pending - 1, 0)
                    if reply is not None:
                        reply.send_nowait(
                            result if result is not None else _unanswered(name, envelope.body)
                        )
        finally:
            desk.serving = False

    async def answer(self, body: Body, name: str) -> Reply | None:
        """This actor's handling of one message: what ``handle`` returned (None for a tell),
        or the exception it raised, with a note saying which actor raised it."""
        try:
            return await self.handle(body)
        except Exception as err:  # a failed request is a reply, not a dead actor
            err.add_note(f"raised by the {name} actor handling {_kind(body)}")
            return err

    _desk: Desk | None = None  # its loop's bookkeeping, made by the post that spawns it


@dataclass(slots=True)
class Desk:
    """What an actor has in hand, as its post sees it: whether a request may be handled in the
    asker's own task.

    A request to an actor whose loop is parked on an empty inbox, with nothing sent to it
    still unhandled, would be taken up at once and its asker would wait for it: two trips
    through the scheduler (the actor's wake-up, then the asker's) for no concurrency at all.
    The asker handles it itself instead, still one message at a time: while it does, the
    actor is ``lent`` and its loop waits before taking the next envelope, and a request that
    finds the actor busy goes through the inbox, in order. Nothing else changes: the same
    envelopes are traced in the same order, the same reply or exception comes back. A tell is
    lent so only to an actor whose tells wait on nothing (``quick_tells``): a sender never
    waits on a tell's work.
    """

    serving: bool = False  # the actor's own loop runs (a loop that never starts is never lent)
    pending: int = 0  # messages sent to the actor and not yet handled
    lent: bool = False  # an asker's task is handling a request for the actor now
    returned: trio.Event | None = None  # set when it is done, for a loop that waits on it


def build(kind: str, context: ActorContext) -> Actor:
    """An actor of a registered kind (``ACTORS``), built from ``context``."""
    made = ACTORS.get(kind).build(context)
    if not isinstance(made, Actor):
        raise ProtocolError(f"the {kind} actor kind built {type(made).__name__}, not an Actor")
    return made


class Post:
    """An owner's switchboard: finds actors by name, numbers and traces every envelope."""

    def __init__(self, rollout: str, tracer: TraceRecorder, first_id: int = 1):
        self.rollout = rollout
        self.tracer = tracer
        self._inboxes: dict[str, trio.MemorySendChannel[Delivery]] = {}
        self._actors: dict[str, tuple[Actor, Desk]] = {}
        self.next_id = first_id  # kept across a resume, so ids never repeat within a trace

    def spawn(self, nursery: trio.Nursery, actor: Actor, name: str | None = None) -> None:
        """Start ``actor``; it is addressed by ``name`` (default: its role)."""
        name = name or actor.role
        send, receive = trio.open_memory_channel[Delivery](16)
        self._inboxes[name] = send
        desk = actor._desk = Desk()
        self._actors[name] = (actor, desk)
        nursery.start_soon(actor.serve, receive, name, name=f"{self.rollout}/{name}")

    def _envelope(
        self, sender: str, recipient: str, turn: int, body: Body, reply_to: int | None
    ) -> Envelope:
        self.next_id += 1
        envelope = Envelope(
            id=self.next_id - 1,
            ts=time.time(),
            rollout=self.rollout,
            turn=turn,
            sender=sender,
            recipient=recipient,
            body=body,
            reply_to=reply_to,
        )
        self.tracer.record(envelope)
        return envelope

    async def request(
        self, recipient: str, body: Request[R], *, turn: int, sender: str = "rollout"
    ) -> R:
        """Send ``body`` to the actor named ``recipient`` and wait for its reply, whose type
        the request names; an exception its handler raised is raised here, as itself."""
        actor, desk = self._actors[recipient]
        envelope = self._envelope(sender, recipient, turn, body, None)
        desk.pending += 1
        result: Reply
        if desk.serving and desk.pending == 1:  # idle: handled here, in the asker's task
            answered = await self._lend(actor, desk, recipient, body)
            result = answered if answered is not None else _unanswered(recipient, body)
        else:
            slot = ReplySlot[Reply]()
            await _deliver(self._inboxes[recipient], (envelope, slot), desk)
            result = await slot.receive()
        if isinstance(result, Exception):
            # The trace is a file: the message redacted, and cut (a repr may run to megabytes).
            text = redact(str(result) or type(result).__name__)
            failure = Failure(recipient, bounded(text, 2_000), _kind(result))
            self._envelope(recipient, sender, turn, failure, envelope.id)
            raise result
        self._envelope(recipient, sender, turn, result, envelope.id)
        expected = type(body).reply_type
        if not isinstance(result, expected):
            raise ProtocolError(
                f"the {recipient} actor answered {_kind(body)} with {_kind(result)}, "
                f"not {expected.__name__}"
            )
        return cast(R, result)  # checked against the request's reply type just above

    async def _lend(self, actor: Actor, desk: Desk, name: str, body: Body) -> Reply | None:
        """``actor``'s handling of ``body`` in this task, the actor lent meanwhile (counted in
        ``desk.pending`` by the caller)."""
        desk.lent = True
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
            return await actor.answer(body, name)
        finally:
            desk.lent = False
            desk.pending -= 1
            if desk.returned is not None:
                desk.returned.set()
                desk.returned = None

    async def tell(self, recipient: str, body: Tell, *, turn: int, sender: str = "rollout") -> None:
        """Send ``body`` without waiting for an answer (the actor handles it in order)."""
        actor, desk = self._actors[recipient]
        envelope = self._envelope(sender, recipient, turn, body, None)
        desk.pending += 1
        if actor.quick_tells and desk.serving and desk.pending == 1:
            await self._lend(actor, desk, recipient, body)  # a tell's failure goes unheard
        else:
            await _deliver(self._inboxes[recipient], (envelope, None), desk)

    def asker(self, sender: str) -> JudgeLine:
        """How the actor named ``sender`` asks this post's judge (its requests are traced like
        any other)."""

        async def ask(body: Judge) -> Judgement:
            return await self.request("judge", body, turn=body.turn, sender=sender)

        return ask

    async def close(self) -> None:
        for inbox in self._inboxes.values():
            await inbox.aclose()


async def _deliver(inbox: trio.MemorySendChannel[Delivery], delivery: Delivery, desk: Desk) -> None:
    """Put ``delivery`` in the inbox (counted in ``desk.pending`` by the caller); one that
    never got there is not counted."""
    try:  # into a queue with room: no needless trip through the scheduler
        inbox.send_nowait(delivery)
    except trio.WouldBlock:
        try:
            await inbox.send(delivery)
        except BaseException:
            desk.pending -= 1
            raise
    except BaseException:
        desk.pending -= 1
        raise


def _unanswered(name: str, body: Body) -> ProtocolError:
    return ProtocolError(f"the {name} actor handled {_kind(body)} without replying")


def _kind(value: object) -> str:
    return type(value).__name__
