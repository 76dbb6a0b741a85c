"""HTTP servers on 127.0.0.1 that answer badly on purpose, for the hostile-server tests.

Each kind takes any POST (or GET) and then:

* ``drip``: a 200 whose declared body arrives one byte a second — every read succeeds, so a
  per-read timeout never fires;
* ``endless``: a 200 with a chunked body that never ends, sent as fast as the client reads;
* ``huge``: a 200 with a 50 MB body of blanks (valid JSON padding until the end);
* ``redirect``: a 307 to another address;
* ``silent``: reads the request and never answers.

A server runs in its own threads and stops by itself: every connection ends when the client
goes away, when its lifetime (``lifetime_s``) passes, or when the ``with`` block ends, and the
listener shuts down at the end of the block. ``requests`` counts the requests answered, and
``sent`` the body bytes written, so a test can tell that a client stopped reading early.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

HUGE_BYTES = 50_000_000
REDIRECT_TO = "http://127.0.0.1:9/v1/chat/completions"
_BLOCK = b" " * 65_536


@dataclass
class Hostile:
    kind: str
    lifetime_s: float = 120.0
    stop: threading.Event = field(default_factory=threading.Event)
    requests: int = 0
    sent: int = 0
    changed: threading.Condition = field(default_factory=threading.Condition)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/reply"

    def count(self, sent: int = 0, request: bool = False) -> None:
        with self.changed:
            self.sent += sent
            self.requests += int(request)
            self.changed.notify_all()

    def wait_for_requests(self, n: int, timeout_s: float = 60.0) -> int:
        """The requests read once there are ``n`` (or ``timeout_s`` passed): a request the
        client sent just before it gave up may still be on its way through this server."""
        with self.changed:
            self.changed.wait_for(lambda: self.requests >= n, timeout_s)
            return self.requests


def _read_request(conn: socket.socket) -> bool:
    """Read one request (headers and a Content-Length body); False when the client left."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65_536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65_536)
        if not chunk:
            return False
        body += chunk
    return True


def _answer(state: Hostile, conn: socket.socket) -> None:
    kind = state.kind
    if kind == "redirect":
        conn.sendall(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: "
            + REDIRECT_TO.encode()
            + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        return
    if kind == "silent":
        state.stop.wait()
        return
    if kind == "drip":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        conn.sendall(b"Content-Length: 100000\r\nConnection: close\r\n\r\n")
        while not state.stop.is_set():
            conn.sendall(b" ")
            state.count(1)
            state.stop.wait(1.0)
        return
    if kind == "endless":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        conn.sendall(b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        chunk = b"%x\r\n" % len(_BLOCK) + _BLOCK + b"\r\n"
        while not state.stop.is_set():
            conn.sendall(chunk)
            state.count(len(_BLOCK))
        return
    if kind == "huge":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        conn.sendall(b"Content-Length: %d\r\nConnection: close\r\n\r\n" % HUGE_BYTES)
        left = HUGE_BYTES
        while left > 0 and not state.stop.is_set():
            block = _BLOCK[: min(left, len(_BLOCK))]
            conn.sendall(block)
            state.count(len(block))
            left -= len(block)
        return
    raise ValueError(f"no hostile server of kind {kind!r}")


def _handler(state: Hostile) -> type[socketserver.BaseRequestHandler]:
    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            conn.settimeout(state.lifetime_s)  # a client that stops reading cannot hold us
            try:
                if _read_request(conn):
                    state.count(request=True)
                    _answer(state, conn)
            except OSError:  # the client went away: that is how most of these end
                pass

    return Handler


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


@contextlib.contextmanager
def hostile_server(kind: str, lifetime_s: float = 120.0) -> Iterator[Hostile]:
    """A running server of ``kind``; it stops when the block ends or its lifetime passes."""
    state = Hostile(kind, lifetime_s)
    server = _Server(("127.0.0.1", 0), _handler(state))
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2})
    thread.daemon = True
    thread.start()
    timer = threading.Timer(lifetime_s, state.stop.set)
    timer.daemon = True
    timer.start()
    try:
        yield state
    finally:
        state.stop.set()
        timer.cancel()
        server.shutdown()
        server.server_close()
        thread.join()
