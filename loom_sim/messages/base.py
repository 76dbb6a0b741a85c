"""The message kinds every actor speaks: a body, a request (one reply, of a named type), a
tell (no reply), and the failure the trace records when a handler raised."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin

import msgspec

R = TypeVar("R", bound="Body")


class Body(msgspec.Struct, frozen=True, tag=True, forbid_unknown_fields=False):
    """Base of every message body."""


class Request(Body, Generic[R], frozen=True):
    """A message that gets exactly one reply, of type ``R``."""

    reply_type: ClassVar[type[Body]] = Body

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Request:
                (cls.reply_type,) = get_args(base)


class Tell(Body, frozen=True):
    """A message that gets no reply: the recipient takes note, in order."""


# ─── failures ───────────────────────────────────────────────────────────────


class Failure(Body, frozen=True):
    """What the trace records when an actor's handler raised: the requester gets the exception
    itself and raises it as its own type; this is the readable record of it."""

    actor: str
    error: str  # one sentence for people
    kind: str  # the exception class name, for readers of the trace
