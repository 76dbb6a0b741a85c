"""One keep-alive HTTP/1.1 connection to a plain-``http://`` model server, on a bare socket.

**Why not httpcore, or h11, here.** A run with hundreds of conversations against a server that
answers in milliseconds spends its CPU per call. Profiling 512 rollouts against the fake server
put a third of the event loop's time in the HTTP call. Two thirds of that was httpcore's layers
around h11 (a lock and a trace per request and per read, response models, byte streams, an
async generator per body), so this module spoke h11 itself. Then h11's own event machinery — a
state machine per side, header validation and an event object per part of every message — was
65 µs of CPU per call, and trio's socket wrapper added two scheduler trips per call (a
checkpoint after every successful send and receive). What a model call needs from HTTP/1.1 is
small and fixed: one POST with a known length, one reply framed by ``Content-Length`` or
chunked encoding (or, from an HTTP/1.0 server, by closing). That is what is written here,
strictly: anything else is a protocol error naming what was wrong.

A call sends the request in one write and waits once for the reply to begin (the call's one
checkpoint: it can be cancelled there, and every later read only waits when no bytes are
ready). There are no per-read timeouts: the caller holds one deadline for the whole reply (see
:mod:`loom_sim.models.reply_limits`). Failures are raised as httpx's transport errors, as the
``httpx.AsyncClient`` path raises them, so :func:`loom_sim.models.retry.transport_failure`
turns both paths' failures into the same messages.
"""

from __future__ import annotations

import ipaddress
import select
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import httpx
import trio

from loom_sim.models.reply_limits import Received, ReplyTooLarge, check_declared

__all__ = ["HTTP11Connection", "Reply"]

_READ_SIZE = 64 * 1024
_MAX_HEAD_BYTES = 64 * 1024  # a reply's status line and headers; a chunk's size line
_NO_BODY = frozenset({204, 304})


class Reply(NamedTuple):
    """A reply's status, its headers (lower-cased names; the fast path fills them only when
    the status is not 200: a 200's body is all a model client reads), and its body."""

    status: int
    headers: Mapping[str, str]
    content: bytes


class _Head(NamedTuple):
    status: int
    headers: list[tuple[bytes, bytes]]  # names lower-cased
    keep_alive: bool  # HTTP/1.1 and no ``Connection: close``


def _protocol(message: str) -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError(message)


def _parse_head(head: bytes) -> _Head:
    """A reply's status line and headers, strictly (RFC 9112): the server is a program we
    drive, and a reply we misread would be scored as something the model said."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise _protocol(f"the reply does not start with an HTTP/1.x status line: {lines[0]!r:.80}")
    if len(parts[1]) != 3 or not parts[1].isdigit():
        raise _protocol(f"the reply's status is not a number: {lines[0]!r:.80}")
    headers = []
    keep_alive = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise _protocol(f"a malformed header line in the reply: {line!r:.80}")
        name = name.lower()
        value = value.strip(b" \t")
        if name == b"connection" and b"close" in value.lower():
            keep_alive = False
        headers.append((name, value))
    return _Head(int(parts[1]), headers, keep_alive)


# Where each host and port was last reached: (address family, socket address). The first
# connection to a named server goes through trio's resolver and its happy-eyeballs race (180 µs
# of CPU on loopback); the hundreds that a large run opens next connect straight there (50 µs),
# as does every connection to a server named by its IP address.
_REACHED: dict[tuple[str, int], tuple[int, Any]] = {}


def _literal(host: str, port: int) -> tuple[int, Any] | None:
    """Where an IP address as ``host`` is reached, with no resolver (else None): the first
    connections of a run all start at once, before any could say where it went."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if ip.version == 6:
        return socket.AF_INET6, (str(ip), port, 0, 0)
    return socket.AF_INET, (str(ip), port)


async def _connect_to(family: int, address: Any) -> socket.socket | None:
    """A socket connected to ``address``, or None when it cannot be reached there now (the
    caller goes through the resolver again)."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.connect(address)
        except BlockingIOError:  # under way: done when the socket turns writable
            await trio.lowlevel.wait_writable(sock)
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                sock.close()
                return None
    except OSError:
        sock.close()
        return None
    except BaseException:
        sock.close()
        raise
    return sock


class HTTP11Connection:
    """A connection to ``host:port``, opened on its first request and reused while the server
    keeps it alive. One request at a time: the pool hands a connection to one call."""

    __slots__ = ("_host", "_idle_since", "_keepalive_s", "_port", "_settled", "_sock")

    def __init__(self, host: str, port: int, *, keepalive_s: float) -> None:
        self._host = host
        self._port = port
        self._keepalive_s = keepalive_s
        self._sock: socket.socket | None = None
        self._settled = False  # its last reply was read whole and the server keeps it open
        self._idle_since = 0.0

    def settled(self) -> bool:
        """Whether the last exchange left the connection fit for another: the reply was read
        to its end, nothing more arrived, and the server did not ask to close."""
        return self._sock is not None and self._settled

    def reusable(self) -> bool:
        """Whether the next request may go out on this connection: it is settled, has not sat
        idle past the keep-alive time, and the server has not closed it meanwhile (a closed
        socket reads as readable: its EOF is waiting). The last is a system call, so the pool
        asks it once per request, when it takes the connection."""
        sock = self._sock
        if sock is None or not self._settled:
            return False
        if time.monotonic() - self._idle_since > self._keepalive_s:
            return False
        poll = select.poll()
        poll.register(sock, select.POLLIN)
        return not poll.poll(0)

    async def connect(self, timeout_s: float) -> None:
        key = (self._host, self._port)
        try:
            with trio.fail_after(timeout_s):
                reached = _REACHED.get(key) or _literal(self._host, self._port)
                sock = await _connect_to(*reached) if reached is not None else None
                if sock is None:
                    stream = await trio.open_tcp_stream(self._host, self._port)
                    # the socket trio connected (TCP_NODELAY set), taken over as a plain one
                    sock = socket.socket(fileno=stream.socket.detach())
                    _REACHED[key] = (sock.family, sock.getpeername())
        except trio.TooSlowError as exc:
            raise httpx.ConnectTimeout(f"no connection within {timeout_s:g} s") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        sock.setblocking(False)
        self._sock = sock

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
        lines = [b"POST ", target, b" HTTP/1.1\r\n"]
        for name, value in headers:
            if b"\n" in value or b"\r" in value or b"\n" in name or b"\r" in name:
                raise httpx.LocalProtocolError(f"a line break in the header {name!r}")
            lines += (name, b": ", value, b"\r\n")
        lines += (b"\r\n", body)
        if self._sock is None:
            await self.connect(connect_s)
        sock = self._sock
        assert sock is not None
        self._settled = False
        await self._send(sock, b"".join(lines))
        return await self._read_reply(sock, max_bytes, received)

    @staticmethod
    async def _send(sock: socket.socket, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                try:
                    view = view[sock.send(view) :]
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(sock)
        except OSError:
            # A server may answer and close before taking the whole request; the read says
            # what happened.
            pass

    async def _receive(self, sock: socket.socket, wait: bool) -> bytes:
        """The next bytes from the server (``b""`` at its end). ``wait``: wait for them to
        arrive before reading — the call's checkpoint — rather than try a read first."""
        while True:
            if wait:
                await trio.lowlevel.wait_readable(sock)
            try:
                return sock.recv(_READ_SIZE)
            except BlockingIOError:
                wait = True
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__) from exc

    async def _read_reply(self, sock: socket.socket, max_bytes: int, received: Received) -> Reply:
        buf = bytearray()
        wait = True  # the first read always waits: the call's one checkpoint
        while True:  # the head, past any informational (1xx) replies
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                head = _parse_head(bytes(buf[:end]))
                del buf[: end + 4]
                if 100 <= head.status < 200:
                    if head.status == 101:
                        raise _protocol("the server switched protocols (101) on a model call")
                    continue
                break
            if len(buf) > _MAX_HEAD_BYTES:
                raise _protocol("the reply's headers went past 64 KiB")
            chunk = await self._receive(sock, wait)
            wait = False
            if not chunk:
                if buf:
                    raise _protocol("Server disconnected mid-reply.")
                raise _protocol("Server disconnected without sending a response.")
            buf += chunk
        received.started = True
        keep_alive = head.keep_alive
        length = chunked = None
        for name, value in head.headers:
            if name == b"content-length":
                if not value.isdigit() or (length is not None and int(value) != length):
                    raise _protocol(f"the reply's Content-Length is not one number: {value!r:.40}")
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = value.lower() == b"chunked"
                if not chunked:
                    raise _protocol(f"the reply's Transfer-Encoding is unsupported: {value!r:.40}")
        if head.status in _NO_BODY:
            content = b""
        elif chunked:
            content = await self._chunked(sock, buf, max_bytes, received)
        elif length is not None:
            check_declared(length, max_bytes)
            while len(buf) < length:
                chunk = await self._receive(sock, False)
                if not chunk:
                    raise _protocol("Server disconnected mid-reply.")
                buf += chunk
                received.bytes = min(len(buf), length)
            received.bytes = length
            content = bytes(buf[:length])
            del buf[:length]
        else:  # framed by the server closing the connection (HTTP/1.0 style)
            keep_alive = False
            while chunk := await self._receive(sock, False):
                buf += chunk
                received.bytes = len(buf)
                if received.bytes > max_bytes:
                    raise ReplyTooLarge(max_bytes)
            content = bytes(buf)
            buf.clear()
        if keep_alive and not buf:  # bytes beyond the reply: the stream can't be trusted
            self._settled = True
            self._idle_since = time.monotonic()
        headers: Mapping[str, str] = {}
        if head.status != 200:
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in head.headers}
        return Reply(head.status, headers, content)

    async def _chunked(
        self, sock: socket.socket, buf: bytearray, max_bytes: int, received: Received
    ) -> bytes:
        """A chunked body: each chunk's size line, its bytes and CRLF, then the trailers."""
        parts: list[bytes] = []

        async def line() -> bytes:
            while (end := buf.find(b"\r\n")) < 0:
                if len(buf) > _MAX_HEAD_BYTES:
                    raise _protocol("a chunk's size line went past 64 KiB")
                await more()
            text = bytes(buf[:end])
            del buf[: end + 2]
            return text

        async def more() -> None:
            chunk = await self._receive(sock, False)
            if not chunk:
                raise _protocol("Server disconnected mid-reply.")
            buf.extend(chunk)

        while True:
            size_text = (await line()).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _protocol(f"a malformed chunk size in the reply: {size_text!r:.40}") from None
            if size == 0:
                while await line():  # trailers, up to the blank line
                    pass
                return b"".join(parts)
            received.bytes += size
            if received.bytes > max_bytes:
                raise ReplyTooLarge(max_bytes)
            while len(buf) < size + 2:
                await more()
            if buf[size : size + 2] != b"\r\n":
                raise _protocol("a chunk of the reply is longer than its size says")
            parts.append(bytes(buf[:size]))
            del buf[: size + 2]

    async def aclose(self) -> None:
        sock, self._sock = self._sock, None
        self._settled = False
        if sock is not None:
            trio.lowlevel.notify_closing(sock)
            sock.close()
