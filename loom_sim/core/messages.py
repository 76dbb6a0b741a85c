"""The message kinds every actor speaks, and the open registry a trace line decodes through.

A body is a frozen msgspec Struct, tagged with its class name (``"type": "Speak"``). Every
concrete body class registers itself when it is defined (:data:`MESSAGE_TYPES`), so a system —
or a plug-in — adds a message type by defining it, with no list to edit: the envelope decoder
is built from the registry, and a trace holding a plug-in's messages reads back as those
messages, on resume as anywhere else. The systems' own modules are found through the
``loom_sim.messages`` entry-point group the first time a trace is read.

A request names its reply type — ``class Judge(Request[Judgement])`` — so
``await post.request("judge", Judge(...))`` is a ``Judgement`` to the type checker and is
checked once, in the post. A :class:`Tell` gets no reply.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

import msgspec

from loom_sim.errors import LoomError
from loom_sim.plugins import load_entry_points

R = TypeVar("R", bound="Body")

_KINDS = frozenset({"Request", "Tell"})  # the abstract kinds below, never sent themselves


class _Registry:
    """The message types by tag, and the decoder built from them (rebuilt when they change)."""

    def __init__(self) -> None:
        self.types: dict[str, type[Body]] = {}
        self.lock = threading.Lock()
        self.generation = 0  # bumped at each change: the decoder is rebuilt when it moved
        self.decoder: tuple[int, msgspec.json.Decoder[Any]] | None = None
        self.loaded = False  # the entry-point group has been imported


_REGISTRY = _Registry()
MESSAGE_TYPES: dict[str, type[Body]] = _REGISTRY.types
"""Every concrete message body, by its tag (its class name)."""


class MessageTypeError(LoomError):
    """Two message types share a tag: a trace line could not say which one it holds."""


class Body(msgspec.Struct, frozen=True, tag=True, forbid_unknown_fields=False):
    """Base of every message body. Defining a subclass registers it (see the module doc)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__ == __name__ and cls.__name__ in _KINDS:
            return
        register_message(cls)

    def summary(self) -> str:
        """One line saying what the message is about, for people reading a trace."""
        return type(self).__name__


def register_message(cls: type[Body]) -> type[Body]:
    """Add ``cls`` to :data:`MESSAGE_TYPES` (done for every subclass of :class:`Body`); the
    same class defined again (a reloaded module) replaces itself, another class of the same
    tag is refused."""
    tag = cls.__name__
    with _REGISTRY.lock:
        previous = MESSAGE_TYPES.get(tag)
        if (previous is not None and previous.__qualname__ != cls.__qualname__) or (
            previous is not None and previous.__module__ != cls.__module__
        ):
            raise MessageTypeError(
                f"two message types are tagged {tag!r} ({previous.__module__} and "
                f"{cls.__module__}); rename one of them"
            )
        MESSAGE_TYPES[tag] = cls
        _REGISTRY.generation += 1
    return cls


def forget_message(cls: type[Body]) -> None:
    """Remove a type registered from code (tests, notebooks)."""
    with _REGISTRY.lock:
        if MESSAGE_TYPES.get(cls.__name__) is cls:
            del MESSAGE_TYPES[cls.__name__]
            _REGISTRY.generation += 1


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


class Failure(Body, frozen=True):
    """What the trace records when an actor's handler raised: the requester gets the exception
    itself and raises it as its own type; this is the readable record of it."""

    actor: str
    error: str  # one sentence for people
    kind: str  # the exception class name, for readers of the trace

    def summary(self) -> str:
        return f"{self.kind}: {self.error}"


class Envelope(msgspec.Struct, frozen=True):
    """A message in flight: the unit the trace records."""

    id: int
    ts: float
    rollout: str
    turn: int
    sender: str
    recipient: str
    body: Body
    reply_to: int | None = None


class _Line(msgspec.Struct, frozen=True):
    id: int
    ts: float
    rollout: str
    turn: int
    sender: str
    recipient: str
    body: msgspec.Raw
    reply_to: int | None = None


_LINE = msgspec.json.Decoder(_Line)


def load_message_types() -> None:
    """Import every module of the ``loom_sim.messages`` entry-point group once (loom-sim's
    systems and any plug-in's), so each message type is registered before a trace is read."""
    if not _REGISTRY.loaded:
        load_entry_points("loom_sim.messages", "message type")
        _REGISTRY.loaded = True


def _body_decoder() -> msgspec.json.Decoder[Any]:
    load_message_types()
    with _REGISTRY.lock:
        built = _REGISTRY.decoder
        if built is None or built[0] != _REGISTRY.generation:
            types = tuple(MESSAGE_TYPES.values())
            built = (_REGISTRY.generation, msgspec.json.Decoder(Union[types]))  # noqa: UP007
            _REGISTRY.decoder = built
        return built[1]


def decode_envelope(data: bytes | str) -> Envelope:
    """One trace line back into its :class:`Envelope`, its body as its registered class; a
    tag nobody registered is a ``msgspec.ValidationError`` naming it."""
    line = _LINE.decode(data)
    body = _body_decoder().decode(line.body)
    return Envelope(
        line.id, line.ts, line.rollout, line.turn, line.sender, line.recipient, body, line.reply_to
    )
