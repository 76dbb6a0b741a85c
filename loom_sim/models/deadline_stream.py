"""httpcore's network backend for calls that carry one deadline for the whole reply.

httpcore's trio backend puts a ``trio.fail_after`` scope and an exception-mapping context
manager around every read and write of a connection: three of each per model call. The fast
path of :class:`~loom_sim.models._http.HTTPPool` already runs each call under one deadline for
the whole of it, which is never longer than a read or write timeout would be, so the per-read
scopes never fire first; at 256 rollouts they were ~5 % of the event loop's CPU. This backend
connects as httpcore's does (its connect timeout and error mapping kept) and then reads and
writes the socket directly, mapping a broken or closed socket to httpcore's errors as its own
stream does. Only for plain HTTP: the fast path never speaks TLS.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore
import trio

__all__ = ["DeadlineBackend"]

_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)


class DeadlineBackend(httpcore.AsyncNetworkBackend):
    """httpcore's ``TrioBackend``, whose streams leave timeouts to the caller's deadline."""

    def __init__(self) -> None:
        self._trio = httpcore.TrioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        connected = await self._trio.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return _DeadlineStream(trio.SocketStream(connected.get_extra_info("socket")))

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


class _DeadlineStream(httpcore.AsyncNetworkStream):
    """A request's writes are held and sent in one go before its reply is read.

    httpcore writes a request's head and its body separately, and every send is a system
    call and a trip through trio's scheduler; a request is always followed by a read of its
    reply, so the writes go out together then. A send that fails is dropped, as httpcore
    drops a failed write of a request to read what the server says (a server may answer and
    close before taking the whole body); the read then raises what the closed connection
    gives.
    """

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._held: list[bytes] = []

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            held, self._held = b"".join(self._held), []
            try:
                await self._stream.send_all(held)
            except _BROKEN:
                pass  # see the class's docstring: the read below says what happened
        try:
            return await self._stream.receive_some(max_bytes)
        except _BROKEN as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._held.append(buffer)

    async def aclose(self) -> None:
        await self._stream.aclose()

    def get_extra_info(self, info: str) -> Any:
        socket = self._stream.socket
        if info == "socket":
            return socket
        if info == "is_readable":  # httpcore asks before reusing an idle connection
            return socket.is_readable()
        if info == "client_addr":
            return socket.getsockname()
        if info == "server_addr":
            return socket.getpeername()
        return None
