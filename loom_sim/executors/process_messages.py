"""What the ``processes`` executor's parent and its worker processes say to each other.

One duplex pipe per worker carries tagged msgspec structs encoded as MessagePack: typed both
ways (a message decodes back to its class, a malformed one is an error, not a guess), small,
and an order of magnitude cheaper to encode than pickle. The Ray coordinator's events are
plain tuples because Ray pickles them anyway; here the pipe is ours, so the events are the
same four facts (a rollout started, a turn done, a rollout ended, money spent) as types.

Worker -> parent: :class:`Progress` (the rollouts' :class:`Started`, :class:`TurnDone` and
:class:`Ended`, in the order they happened, a few times a second), :class:`Charged` (a call's
cost, sent only under a cost budget), and last :class:`Finished` or :class:`Failed`. Parent ->
worker: :class:`Spent` (the run's spending, for the worker's budget) and :class:`WindDown`
(stop as Ctrl-C would).
"""

from __future__ import annotations

from multiprocessing.connection import Connection

import msgspec

__all__ = [
    "Charged",
    "Ended",
    "Failed",
    "Finished",
    "Progress",
    "Spent",
    "Started",
    "TurnDone",
    "WindDown",
    "decode_from_parent",
    "decode_from_worker",
    "send",
]


class Started(msgspec.Struct, tag=True, frozen=True):
    label: str
    turns: int
    done: int


class TurnDone(msgspec.Struct, tag=True, frozen=True):
    label: str
    turn: int
    phase: str
    tokens: int
    cost: float | None
    elapsed: float


class Ended(msgspec.Struct, tag=True, frozen=True):
    label: str
    status: str
    detail: str | None


class Progress(msgspec.Struct, tag=True, frozen=True):
    """The rollouts' progress since the last: :class:`Started`, :class:`TurnDone` and
    :class:`Ended`, in the order they happened."""

    events: list[Started | TurnDone | Ended]


class Charged(msgspec.Struct, tag=True, frozen=True):
    usd: float


class Finished(msgspec.Struct, tag=True, frozen=True):
    """The worker's cells are over (or it stopped when told to): what its hub and cache saw."""

    stopped: bool  # it was told to stop before its cells were done
    retried: dict[str, dict[str, int]]  # the hub's faults, as models.retry.Faults holds them
    gave_up: dict[str, int]
    cache_hits: int = 0
    cache_misses: int = 0
    cache_stored: int = 0
    cache_problem: str | None = None


class Failed(msgspec.Struct, tag=True, frozen=True):
    """The worker's work raised: one of loom-sim's errors (``message`` is its sentence), or a
    bug (``internal``: ``message`` is the traceback)."""

    message: str
    internal: bool = False


class Spent(msgspec.Struct, tag=True, frozen=True):
    """The run's spending so far, of which ``yours`` was this worker's own."""

    total: float
    yours: float


class WindDown(msgspec.Struct, tag=True, frozen=True):
    """Stop as Ctrl-C stops a run: every rollout unwinds, every completed turn is kept."""


FromWorker = Progress | Charged | Finished | Failed
FromParent = Spent | WindDown

_ENCODER = msgspec.msgpack.Encoder()
decode_from_worker = msgspec.msgpack.Decoder(FromWorker).decode
decode_from_parent = msgspec.msgpack.Decoder(FromParent).decode


def send(conn: Connection, message: FromWorker | FromParent) -> None:
    """Write one message (blocking while the pipe is full: the reader drains it)."""
    conn.send_bytes(_ENCODER.encode(message))
