"""The fast path's HTTP/1.1 connection (on a bare socket): a request's head and body leave
in one send; the connection is kept alive and reused; a server that closes early, floods or
answers with an error gets httpx's transport errors and the reply's headers."""

from __future__ import annotations

import contextlib
import json
import socket

import httpx
import pytest
import trio

from loom_sim.models import http11
from loom_sim.models.http11 import HTTP11Connection
from loom_sim.models.reply_limits import Received, ReplyTooLarge
from loom_sim.testing.fake_server import FakeOpenAIServer

HEADERS = ((b"Host", b"127.0.0.1"), (b"Content-Type", b"application/json"))


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as running:
        yield running


def _headers(body: bytes) -> tuple[tuple[bytes, bytes], ...]:
    return (*HEADERS, (b"Content-Length", b"%d" % len(body)))


async def _post(conn: HTTP11Connection, body: bytes, max_bytes: int = 1 << 20):
    return await conn.post(
        b"/v1/chat/completions",
        _headers(body),
        body,
        max_bytes=max_bytes,
        received=Received(),
        connect_s=5.0,
    )


async def test_requests_go_out_in_one_send_each_on_one_kept_alive_connection(server, monkeypatch):
    sends: list[int] = []
    real = socket.socket.send

    def counted(self, data, *flags):
        sent = real(self, data, *flags)
        sends.append(sent)
        return sent

    monkeypatch.setattr(socket.socket, "send", counted)
    body = json.dumps(
        {"model": "fake", "messages": [{"role": "user", "content": "Hello there."}]}
    ).encode()
    conn = HTTP11Connection("127.0.0.1", server.port, keepalive_s=30.0)
    sockets = []
    for _ in range(3):
        reply = await _post(conn, body)
        assert reply.status == 200
        assert json.loads(reply.content)["choices"][0]["message"]["content"]
        assert conn.reusable()
        sockets.append(conn._sock.fileno())
    await conn.aclose()
    assert len(sends) == 3  # head and body together, once per request
    assert all(size > len(body) for size in sends)
    assert len(set(sockets)) == 1  # the one connection, kept alive


async def _serve_once(answer: bytes, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """A server that reads one request's head, writes ``answer`` and closes."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    task_status.started(listener.socket.getsockname()[1])
    async with listener:
        stream = await listener.accept()
        async with stream:
            seen = b""
            while b"\r\n\r\n" not in seen:
                seen += await stream.receive_some(65536)
            if answer:
                with contextlib.suppress(trio.BrokenResourceError):  # the client stopped reading
                    await stream.send_all(answer)


async def _against(answer: bytes, max_bytes: int = 1 << 20):
    async with trio.open_nursery() as nursery:
        port = await nursery.start(_serve_once, answer)
        conn = HTTP11Connection("127.0.0.1", port, keepalive_s=30.0)
        try:
            outcome: object = await _post(conn, b"{}", max_bytes)
        except Exception as exc:  # raised below, not as a group out of the nursery
            outcome = exc
        reusable = conn.reusable()
        await conn.aclose()
    if isinstance(outcome, Exception):
        raise outcome
    return outcome, reusable


async def test_a_server_that_closes_without_answering_is_a_protocol_error():
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        await _against(b"")


async def test_a_reply_cut_off_mid_body_is_a_protocol_error():
    with pytest.raises(httpx.RemoteProtocolError):
        await _against(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial":')


async def test_an_error_reply_keeps_its_headers_and_a_closing_server_ends_reuse():
    answer = b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nConnection: close\r\n\r\n"
    reply, reusable = await _against(answer)
    assert (reply.status, reply.headers["retry-after"], reply.content) == (429, "3", b"")
    assert not reusable


async def test_a_reply_over_the_cap_stops_reading_whether_declared_or_not():
    with pytest.raises(ReplyTooLarge) as declared:
        await _against(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000, 1000)
    assert declared.value.declared == 5000
    flood = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"800\r\n" + b"x" * 2048
    with pytest.raises(ReplyTooLarge) as streamed:
        await _against(flood + b"\r\n0\r\n\r\n", 1000)
    assert streamed.value.declared is None


async def test_a_refused_connection_is_a_connect_error():
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()  # nobody listens there now
    conn = HTTP11Connection("127.0.0.1", port, keepalive_s=30.0)
    with pytest.raises(httpx.ConnectError):
        await _post(conn, b"{}")


async def test_a_chunked_reply_is_put_together_with_its_extensions_and_trailers():
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;note=x\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n"
    )
    reply, _ = await _against(answer)
    assert (reply.status, reply.content) == (200, b"hello, world")


async def test_an_informational_reply_is_skipped_and_a_close_framed_body_read_to_its_end():
    answer = b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nContent-Type: x\r\n\r\n{"a": 1}'
    reply, reusable = await _against(answer)
    assert (reply.status, reply.content) == (200, b'{"a": 1}')
    assert not reusable


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"SPDY/3 200 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 2x0 OK\r\n\r\n", "status is not a number"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "Transfer-Encoding"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", "longer"),
    ],
)
async def test_a_malformed_reply_is_a_protocol_error_that_says_what(answer, said):
    with pytest.raises(httpx.RemoteProtocolError, match=said):
        await _against(answer)


async def test_bytes_beyond_the_reply_end_the_connection_s_reuse(server):
    reply, reusable = await _against(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra")
    assert reply.content == b"{}"
    assert not reusable


async def test_a_header_value_with_a_line_break_is_refused_before_sending(server):
    conn = HTTP11Connection("127.0.0.1", server.port, keepalive_s=30.0)
    with pytest.raises(httpx.LocalProtocolError):
        await conn.post(
            b"/v1/chat/completions",
            ((b"Authorization", b"Bearer x\r\nX-Injected: 1"),),
            b"{}",
            max_bytes=1000,
            received=Received(),
            connect_s=5.0,
        )
    await conn.aclose()


async def test_a_server_named_by_address_is_connected_to_without_the_resolver(server, monkeypatch):
    def no_resolver(*args, **kwargs):
        raise AssertionError("trio's resolver was asked for an IP address")

    monkeypatch.setattr(trio, "open_tcp_stream", no_resolver)
    monkeypatch.setattr(http11, "_REACHED", {})  # not even reached before
    conn = HTTP11Connection("127.0.0.1", server.port, keepalive_s=30.0)
    reply = await _post(conn, b"{}")
    await conn.aclose()
    assert reply.status in (200, 400)  # the server answered: the connection was made


async def test_a_named_server_is_resolved_once_then_reached_directly(server, monkeypatch):
    resolved: list[str] = []
    real = trio.open_tcp_stream

    async def counted(host, port, **kwargs):
        resolved.append(host)
        return await real(host, port, **kwargs)

    monkeypatch.setattr(trio, "open_tcp_stream", counted)
    monkeypatch.setattr(http11, "_REACHED", {})
    for _ in range(3):
        conn = HTTP11Connection("localhost", server.port, keepalive_s=30.0)
        reply = await _post(conn, b"{}")
        await conn.aclose()
        assert reply.status in (200, 400)
    assert resolved == ["localhost"]


async def test_a_server_gone_from_where_it_was_reached_is_a_connect_error(monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(
        http11, "_REACHED", {("localhost", port): http11._literal("127.0.0.1", port)}
    )
    for host in ("127.0.0.1", "localhost"):
        conn = HTTP11Connection(host, port, keepalive_s=30.0)
        with pytest.raises(httpx.ConnectError):
            await _post(conn, b"{}")
