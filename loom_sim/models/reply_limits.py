"""How long one HTTP reply may take and how large it may grow.

A per-read timeout bounds the silence between two bytes, not the reply: a server that sends
one byte a second, or a chunked body that never ends, passes every read and holds a call (and
its memory) for as long as it likes. So every reply loom-sim reads over HTTP — a model's or a
target's — has a **deadline** for the whole of it (request sent, status, headers and body) and
a **size cap** on its body, read as a stream and abandoned the moment it passes the cap.

Both are failures of one attempt, raised by the pool as transport errors so each caller's
existing classification (:func:`loom_sim.models.retry.transport_failure`) turns them into its
own message: a passed deadline is a timeout the retry policy may try again; a reply over the
cap is a bad reply, never retried (the same request would bring the same flood back).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

__all__ = [
    "MAX_REPLY_BYTES",
    "Received",
    "ReplyDeadline",
    "ReplyTooLarge",
    "check_declared",
    "read_capped",
    "size_text",
]

#: The largest model reply read: far above any completion (a 32k-token answer is ~130 KB of
#: JSON), far below what would strain memory with hundreds of calls in flight.
MAX_REPLY_BYTES = 8 * 1024 * 1024


def size_text(n: int) -> str:
    """``8 MiB``, ``512 KiB`` or ``1,000 bytes``: how a cap reads in a message."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n:,} bytes"


class Received:
    """How far the reply in progress got — its status line and headers (``started``), the
    bytes of its body — so a passed deadline can say whether the server was silent or still
    sending."""

    __slots__ = ("bytes", "started")

    def __init__(self) -> None:
        self.started = False
        self.bytes = 0


class ReplyDeadline(httpx.TimeoutException):
    """The whole reply did not arrive within its deadline; ``started``: its headers had."""

    def __init__(self, deadline_s: float, received: Received) -> None:
        if received.started:
            reason = (
                f"the reply was still arriving after {deadline_s:g} s "
                f"({received.bytes:,} bytes of its body so far)"
            )
        else:
            reason = f"no complete reply within {deadline_s:g} s"
        super().__init__(reason)
        self.reason = reason
        self.deadline_s = deadline_s
        self.started = received.started


class ReplyTooLarge(httpx.TransportError):
    """The reply's body passed the size cap (or declared a length over it); reading stopped."""

    def __init__(self, cap: int, declared: int | None = None) -> None:
        said = f" (it declared {declared:,} bytes)" if declared is not None else ""
        self.what = f"went past the {size_text(cap)} cap on one reply's size{said}"
        self.reason = f"the reply {self.what}"
        super().__init__(self.reason)
        self.cap = cap
        self.declared = declared


def check_declared(length: bytes | str | int | None, cap: int) -> None:
    """Refuse before reading a body whose ``Content-Length`` is over the cap."""
    if length is None:
        return
    try:
        declared = int(length)
    except ValueError:
        return  # the stream's own count still holds it to the cap
    if declared > cap:
        raise ReplyTooLarge(cap, declared)


async def read_capped(stream: AsyncIterator[bytes], cap: int, received: Received) -> bytes:
    """The body of ``stream``, or ``ReplyTooLarge`` as soon as it passes ``cap`` bytes."""
    parts: list[bytes] = []
    async for chunk in stream:
        received.bytes += len(chunk)
        if received.bytes > cap:
            raise ReplyTooLarge(cap)
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)
