"""The fast path's network stream: a request's head and body leave in one send, before its
reply is read; a send that fails is dropped and the read says what the connection gives."""

from __future__ import annotations

import json

import httpcore
import pytest
import trio

from loom_sim.models.deadline_stream import DeadlineBackend, _DeadlineStream
from loom_sim.testing.fake_server import FakeOpenAIServer


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as running:
        yield running


async def test_a_request_goes_out_in_one_send_and_its_reply_comes_back(server, monkeypatch):
    sends: list[int] = []
    real = trio.SocketStream.send_all

    async def counted(self, data):
        sends.append(len(data))
        await real(self, data)

    monkeypatch.setattr(trio.SocketStream, "send_all", counted)
    body = json.dumps(
        {"model": "fake", "messages": [{"role": "user", "content": "Hello there."}]}
    ).encode()
    async with httpcore.AsyncConnectionPool(network_backend=DeadlineBackend()) as pool:
        for _ in range(3):  # a new connection, then the same one kept alive
            reply = await pool.request(
                "POST",
                server.base_url + "/chat/completions",
                headers={"Content-Type": "application/json"},
                content=body,
            )
            assert reply.status == 200
            assert json.loads(reply.content)["choices"][0]["message"]["content"]
    assert len(sends) == 3  # head and body together, once per request
    assert all(size > len(body) for size in sends)


async def test_a_send_to_a_closed_peer_is_dropped_and_the_read_reports_the_close():
    ours, theirs = trio.socket.socketpair()
    theirs.close()
    connection = _DeadlineStream(trio.SocketStream(ours))
    await connection.write(b"POST / HTTP/1.1\r\n\r\n")  # held: nothing sent yet, nothing raised
    try:
        got = await connection.read(1024)
    except httpcore.ReadError:
        got = None  # the peer's reset, on systems that report it at the read
    assert got in (b"", None)
    await connection.aclose()
