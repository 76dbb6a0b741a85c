"""One keep-alive HTTP/1.1 connection to a plain-``http://`` model server: h11 on a trio socket.

**Why not httpcore here.** A run with hundreds of conversations against a server that answers
in milliseconds spends its CPU per call, and profiling 512 rollouts against the fake server put
a third of the event loop's time in the HTTP call, two thirds of that in httpcore's layers
around h11: a lock and a trace per request and per read, a response model and byte-stream
objects, an async generator per body, and a close protocol per reply. The protocol itself — h11
— is the same library httpcore uses; what is left out is only the machinery a POST with a
deadline, on a connection we already pool ourselves, never needs.

A call sends the request's head and body in one write (every send is a system call and a trip
through trio's scheduler) and reads until h11 says the reply is complete. There are no per-read
timeouts: the caller holds one deadline for the whole reply (see
:mod:`loom_sim.models.reply_limits`). Failures are raised as httpx's transport errors, as the
``httpx.AsyncClient`` path raises them, so :func:`loom_sim.models.retry.transport_failure`
turns both paths' failures into the same messages.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import h11
import httpx
import trio

from loom_sim.models.reply_limits import Received, ReplyTooLarge, check_declared

__all__ = ["HTTP11Connection", "Reply"]

_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)
_READ_SIZE = 64 * 1024


class Reply(NamedTuple):
    """A reply's status, its headers (lower-cased names; the fast path fills them only when
    the status is not 200: a 200's body is all a model client reads), and its body."""

    status: int
    headers: Mapping[str, str]
    content: bytes


class HTTP11Connection:
    """A connection to ``host:port``, opened on its first request and reused while the server
    keeps it alive. One request at a time: the pool hands a connection to one call."""

    __slots__ = ("_h11", "_host", "_idle_since", "_keepalive_s", "_port", "_stream")

    def __init__(self, host: str, port: int, *, keepalive_s: float) -> None:
        self._host = host
        self._port = port
        self._keepalive_s = keepalive_s
        self._stream: trio.SocketStream | None = None
        self._h11 = h11.Connection(h11.CLIENT)
        self._idle_since = 0.0

    def reusable(self) -> bool:
        """Whether the next request may go out on this connection: it finished its last
        reply cleanly, has not sat idle past the keep-alive time, and the server has not
        closed it meanwhile (a closed socket reads as readable: its EOF is waiting)."""
        stream = self._stream
        if stream is None or self._h11.our_state is not h11.IDLE:
            return False
        if time.monotonic() - self._idle_since > self._keepalive_s:
            return False
        return not stream.socket.is_readable()

    async def connect(self, timeout_s: float) -> None:
        try:
            with trio.fail_after(timeout_s):
                self._stream = await trio.open_tcp_stream(self._host, self._port)
        except trio.TooSlowError as exc:
            raise httpx.ConnectTimeout(f"no connection within {timeout_s:g} s") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc

    async def post(
        self,
        target: bytes,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
        *,
        max_bytes: int,
        received: Received,
        connect_s: float,
    ) -> Reply:
        """POST ``body`` to ``target``; the reply, or one of httpx's transport errors. After a
        failure the connection is closed and must not be reused."""
        if self._stream is None:
            await self.connect(connect_s)
        stream = self._stream
        assert stream is not None
        conn = self._h11
        try:
            head = conn.send(h11.Request(method=b"POST", target=target, headers=list(headers)))
            data = b"".join((head or b"", conn.send(h11.Data(data=body)) or b""))
            data += conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc)) from exc
        try:
            await stream.send_all(data)
        except _BROKEN:
            # A server may answer and close before taking the whole request; the read below
            # says what happened.
            pass
        return await self._read_reply(stream, max_bytes, received)

    async def _read_reply(
        self, stream: trio.SocketStream, max_bytes: int, received: Received
    ) -> Reply:
        conn = self._h11
        status = 0
        headers: dict[str, str] = {}
        parts: list[bytes] = []
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc)) from exc
            if event is h11.NEED_DATA:
                try:
                    chunk = await stream.receive_some(_READ_SIZE)
                except _BROKEN as exc:
                    raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
                if not chunk and not received.started:
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response."
                    )
                conn.receive_data(chunk)
            elif type(event) is h11.Data:
                received.bytes += len(event.data)
                if received.bytes > max_bytes:
                    raise ReplyTooLarge(max_bytes)
                parts.append(event.data)
            elif type(event) is h11.Response:
                received.started = True
                status = event.status_code
                for name, value in event.headers:
                    if name == b"content-length":
                        check_declared(value, max_bytes)
                if status != 200:
                    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in event.headers}
            elif type(event) is h11.EndOfMessage:
                break
            elif type(event) is h11.ConnectionClosed:
                raise httpx.RemoteProtocolError("Server disconnected mid-reply.")
            # an InformationalResponse (100 Continue) or PAUSED: read on
        content = parts[0] if len(parts) == 1 else b"".join(parts)
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            self._idle_since = time.monotonic()
        return Reply(status, headers, content)

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()
