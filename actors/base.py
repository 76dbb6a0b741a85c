"""Actors on trio: one inbox each, request/reply with correlation ids, failures as replies.

An actor is a trio task that owns a receive channel and its own state; nothing else touches
that state. Its loop takes one envelope at a time, so its state needs no locks. A handler that
raises does not kill the actor silently: the requester gets a :class:`Failure` reply and raises
:class:`ActorFailure`, and the rollout that owns both decides what that means (usually:
``error``, with every completed turn kept). Nobody waits forever on a dead actor: actors run in
the rollout's nursery, so a crashed loop cancels the whole rollout instead of hanging it.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import ClassVar

import trio

from loom_sim.errors import LoomError
from loom_sim.messages import Body, Envelope, Failure
from loom_sim.models.base import ModelError
from loom_sim.store.trace import TraceRecorder

# (envelope, where to send the reply or None for a tell)
Delivery = tuple[Envelope, "trio.MemorySendChannel[Body] | None"]


class ActorFailure(LoomError):
    """A request's handler raised; ``failure`` says which actor and why."""

    def __init__(self, failure: Failure):
        self.failure = failure
        super().__init__(f"{failure.actor}: {failure.error}")


class Actor(ABC):
    """Base of every actor: subclasses implement :meth:`handle`, one message at a time."""

    role: ClassVar[str] = "actor"

    @abstractmethod
    async def handle(self, body: Body) -> Body | None:
        """Answer a request (return the reply) or absorb a tell (return None)."""

    async def serve(self, inbox: trio.MemoryReceiveChannel[Delivery]) -> None:
        async with inbox:
            async for envelope, reply in inbox:
                try:
                    result = await self.handle(envelope.body)
                except Exception as err:  # a failed request is a reply, not a dead actor
                    result = Failure(
                        actor=self.role,
                        error=str(err) or type(err).__name__,
                        kind=type(err).__name__,
                        model_error=isinstance(err, ModelError),
                    )
                if reply is not None:
                    if result is None:
                        result = Failure(
                            self.role, "handled a request without replying", "ProtocolError"
                        )
                    reply.send_nowait(result)


class Post:
    """A rollout's switchboard: finds actors by role, numbers and traces every envelope."""

    def __init__(self, rollout: str, tracer: TraceRecorder, first_id: int = 1):
        self.rollout = rollout
        self.tracer = tracer
        self._inboxes: dict[str, trio.MemorySendChannel[Delivery]] = {}
        self.next_id = first_id  # kept across a resume, so ids never repeat within a trace

    def spawn(self, nursery: trio.Nursery, actor: Actor, name: str | None = None) -> None:
        """Start ``actor``; it is addressed by ``name`` (default: its role)."""
        name = name or actor.role
        send, receive = trio.open_memory_channel[Delivery](16)
        self._inboxes[name] = send
        nursery.start_soon(actor.serve, receive, name=f"{self.rollout}/{name}")

    def roles(self) -> list[str]:
        return list(self._inboxes)

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
        self, recipient: str, body: Body, *, turn: int, sender: str = "rollout"
    ) -> Body:
        """Send ``body`` to the actor playing ``recipient`` and wait for its reply."""
        inbox = self._inboxes[recipient]
        reply_send, reply_receive = trio.open_memory_channel[Body](1)
        envelope = self._envelope(sender, recipient, turn, body, None)
        try:  # no needless trip through the scheduler: the reply's wait yields anyway
            inbox.send_nowait((envelope, reply_send))
        except trio.WouldBlock:
            await inbox.send((envelope, reply_send))
        result = await reply_receive.receive()
        self._envelope(recipient, sender, turn, result, envelope.id)
        if isinstance(result, Failure):
            raise ActorFailure(result)
        return result

    async def tell(self, recipient: str, body: Body, *, turn: int, sender: str = "rollout") -> None:
        """Send ``body`` without waiting for an answer (the actor handles it in order)."""
        await self._inboxes[recipient].send(
            (self._envelope(sender, recipient, turn, body, None), None)
        )

    async def close(self) -> None:
        for inbox in self._inboxes.values():
            await inbox.aclose()
