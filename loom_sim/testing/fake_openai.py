"""A fake OpenAI / Anthropic HTTP server for tests and benchmarks.

Why a real server and not a mocked transport: the costs and failures that matter in the model
layer live in the real path — connection pools, keep-alive, timeouts, half-written bodies,
``Retry-After`` headers. A mock transport would skip exactly the code we want to exercise.

Why asyncio and a hand-written HTTP/1.1 parser: it runs in its own process (so it never
competes with the trio client for the GIL) and has to answer ~2000 requests/s on one core
with keep-alive. An ``asyncio.Protocol`` with a twenty-line parser does that; a framework
would spend more CPU than the client under test. Only what the clients send is supported:
``Content-Length`` bodies, keep-alive, no chunked uploads, no pipelining guarantees.

Run it::

    python -m loom_sim.testing.fake_openai --port 0 --latency 0.05 \
        --fault-rate 0.2 --faults 429,500,529,stall,malformed --seed 1

It prints ``LISTENING <port>`` on stdout and exits when its stdin reaches EOF (so it dies with
the process that started it) or after ``--max-lifetime`` seconds. From Python use
:class:`~loom_sim.testing.fake_server.FakeOpenAIServer` as a context manager;
what it says is in :mod:`~loom_sim.testing.fake_replies`.

Endpoints: ``POST /v1/chat/completions`` (OpenAI), ``POST /v1/messages`` (Anthropic),
``GET /v1/models`` and ``GET /stats`` (counters as JSON, with the most completion requests
in flight at once when ``--latency`` is set: what the clients' limits let through; and
``window_s``: first completion request to last reply; ``GET /stats/reset`` answers the same
and starts a new window).

Replies are deterministic functions of the request: ``"reply <n>: "`` (``n`` = number of
messages in the request) followed by the first words of the last user message, or a JSON
object when structured output was requested (an example instance of the schema for OpenAI's
``response_format``; a fenced JSON block wrapped in prose for Anthropic, whose client puts the
schema in the system prompt — so the tolerant parser is exercised too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import threading
import time
from collections import Counter
from typing import Any

import msgspec

from loom_sim.testing.fake_replies import anthropic_message, openai_completion

FAULT_KINDS = ("429", "500", "529", "stall", "malformed")
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    529: "Overloaded",
}
_MAX_HEADER_BYTES = 64 * 1024


# ─── the server ─────────────────────────────────────────────────────────────


class _State:
    """Options and counters shared by every connection."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.latency = args.latency
        self.fault_rate = args.fault_rate
        self.faults = [f for f in args.faults.split(",") if f] if args.faults else []
        unknown = set(self.faults) - set(FAULT_KINDS)
        if unknown:
            raise SystemExit(f"unknown fault kinds: {', '.join(sorted(unknown))}")
        self.sequence = (
            [f for f in args.fault_sequence.split(",") if f] if args.fault_sequence else []
        )
        self.rng = random.Random(args.seed)
        self.retry_after = args.retry_after
        self.reject_json_schema = args.reject_json_schema
        self.require_key = args.require_key
        self.context_tokens = args.context_tokens
        self.keepalive_timeout = args.keepalive_timeout
        self.seeded_replies = args.seeded_replies
        self.requests = 0
        # the window of the completions answered since the last /stats/reset (monotonic s)
        self.first_request: float | None = None
        self.last_reply: float | None = None
        self.connections = 0
        self.in_flight = 0  # completion requests being answered now
        self.peak_in_flight = 0  # the most ever at once: what a client's limits let through
        self.by_route: Counter[str] = Counter()
        self.faults_injected: Counter[str] = Counter()

    def pick_fault(self) -> str | None:
        """The fault for the next completion request: the sequence first, then the rate."""
        if self.sequence:
            kind = self.sequence.pop(0)
            return None if kind == "ok" else kind
        if self.fault_rate > 0 and self.faults and self.rng.random() < self.fault_rate:
            return self.rng.choice(self.faults)
        return None

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "connections": self.connections,
            "by_route": dict(self.by_route),
            "faults": sum(self.faults_injected.values()),
            "faults_by_kind": dict(self.faults_injected),
            "in_flight": self.in_flight,
            "peak_in_flight": self.peak_in_flight,
            "cpu_s": time.process_time(),  # the server's own CPU: its share of a shared machine
            "window_s": (self.last_reply - self.first_request)
            if self.first_request is not None and self.last_reply is not None
            else None,
        }


def _response(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}"]
    head.append("content-type: application/json")
    head.append(f"content-length: {len(body)}")
    for name, value in (headers or {}).items():
        head.append(f"{name}: {value}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body


def _error(status: int, message: str, kind: str = "error", anthropic: bool = False) -> bytes:
    if anthropic:
        payload = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"message": message, "type": kind, "code": None}}
    return json.dumps(payload).encode()


class _Connection(asyncio.Protocol):
    def __init__(self, state: _State) -> None:
        self.state = state
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # one request at a time per connection (no pipelining)
        self.closed = False
        self.idle_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.state.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.idle_timer is not None:
            self.idle_timer.cancel()

    def data_received(self, data: bytes) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None
        self.buffer += data
        if not self.busy:
            self._try_request()

    def _try_request(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > _MAX_HEADER_BYTES:
                self._close()
            return
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        try:
            method, target, _version = head[0].split(" ", 2)
        except ValueError:
            self._close()
            return
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        if len(self.buffer) < end + 4 + length:
            return  # wait for the rest of the body
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        self.busy = True
        keep_alive = headers.get("connection", "").lower() != "close"
        handler = self._handle(method, target.split("?", 1)[0], headers, body, keep_alive)
        asyncio.get_running_loop().create_task(handler)

    def _close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()

    def _send(self, data: bytes, keep_alive: bool) -> None:
        if self.closed or self.transport is None:
            return
        self.transport.write(data)
        self.busy = False
        if not keep_alive:
            self._close()
        elif self.buffer:
            self._try_request()
        elif self.state.keepalive_timeout is not None:  # close idle connections, as uvicorn does
            loop = asyncio.get_running_loop()
            self.idle_timer = loop.call_later(self.state.keepalive_timeout, self._close)

    async def _handle(
        self, method: str, path: str, headers: dict[str, str], body: bytes, keep_alive: bool
    ) -> None:
        state = self.state
        state.requests += 1
        state.by_route[path] += 1
        if method == "GET" and path in ("/stats", "/stats/reset"):
            self._send(_response(200, json.dumps(state.stats()).encode()), keep_alive)
            if path == "/stats/reset":
                state.first_request = state.last_reply = None
            return
        if method == "GET" and path == "/v1/models":
            models = {"object": "list", "data": [{"id": "fake", "object": "model"}]}
            self._send(_response(200, json.dumps(models).encode()), keep_alive)
            return
        routes = ("/v1/chat/completions", "/v1/messages", "/chat/completions", "/messages")
        if path not in routes:
            self._send(_response(404, _error(404, f"no route {path}")), keep_alive)
            return
        if method != "POST":
            self._send(_response(405, _error(405, "use POST")), keep_alive)
            return
        anthropic = path.endswith("/messages")
        if state.require_key is not None:
            given = headers.get("x-api-key") if anthropic else None
            if not anthropic:
                given = headers.get("authorization", "").removeprefix("Bearer ").strip()
            if given != state.require_key:
                # Echo the key, as some servers do: the client must mask it in its errors.
                err = _error(401, f"invalid api key {given!r}", "authentication_error", anthropic)
                self._send(_response(401, err), keep_alive)
                return
        try:
            payload = msgspec.json.decode(body)  # a strict, fast parse: the server's CPU is
            # taken from the client it serves when both share a machine (bench_concurrency)
            messages = payload["messages"]
        except (ValueError, KeyError, TypeError):
            self._send(_response(400, _error(400, "invalid JSON body", anthropic=anthropic)), True)
            return
        if state.first_request is None:
            state.first_request = time.monotonic()
        fault = state.pick_fault()
        if fault is not None:
            state.faults_injected[fault] += 1
        if fault == "stall":
            return  # never answer: the client's timeout has to fire
        if state.latency > 0:
            state.in_flight += 1
            state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
            try:
                await asyncio.sleep(state.latency)
            finally:
                state.in_flight -= 1
        if fault == "429":
            extra = {}
            if state.retry_after is not None:
                extra["retry-after"] = f"{state.retry_after:g}"
            err = _error(429, "rate limited", "rate_limit_error", anthropic)
            self._send(_response(429, err, extra), keep_alive)
        elif fault == "500":
            self._send(_response(500, _error(500, "internal", "api_error", anthropic)), keep_alive)
        elif fault == "529":
            err = _error(529, "overloaded", "overloaded_error", anthropic)
            self._send(_response(529, err), keep_alive)
        elif fault == "malformed":
            self._send(_response(200, b'{"id": "x", "choices": [{"message": {"content": "tr'), True)
        elif anthropic:
            self._send(_response(200, anthropic_message(payload, messages)), keep_alive)
            state.last_reply = time.monotonic()
        else:
            fmt = payload.get("response_format") or {}
            prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4 + 1
            if state.context_tokens is not None and prompt > state.context_tokens:
                # llama.cpp's server, word for word (its default context is 2,048 tokens)
                err = json.dumps(
                    {
                        "error": {
                            "code": 400,
                            "message": "the request exceeds the available context size, "
                            "try increasing it",
                            "type": "exceed_context_size_error",
                            "n_prompt_tokens": prompt,
                            "n_ctx": state.context_tokens,
                        }
                    }
                ).encode()
                self._send(_response(400, err), keep_alive)
                return
            if state.reject_json_schema and fmt.get("type") == "json_schema":
                err = _error(400, "response_format json_schema is not supported", "invalid_request")
                self._send(_response(400, err), keep_alive)
                return
            seed = payload.get("seed") if state.seeded_replies else None
            self._send(_response(200, openai_completion(payload, messages, fmt, seed)), keep_alive)
            state.last_reply = time.monotonic()


async def _serve(args: argparse.Namespace) -> None:
    state = _State(args)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    server = await loop.create_server(
        lambda: _Connection(state), host="127.0.0.1", port=args.port, backlog=1024
    )
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    if not args.ignore_stdin:

        def watch_stdin() -> None:
            # A blocking read in a daemon thread: portable, no loop plumbing. os.read on the
            # raw descriptor, not sys.stdin: a daemon thread holding the buffered reader's
            # lock makes interpreter shutdown abort.
            with contextlib.suppress(Exception):
                while os.read(0, 4096):
                    pass
            with contextlib.suppress(RuntimeError):  # the loop may be closed already
                loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=watch_stdin, daemon=True).start()
    loop.call_later(args.max_lifetime, stop.set)
    async with server:
        await stop.wait()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loom_sim.testing.fake_openai",
        description="Fake OpenAI/Anthropic server for tests and benchmarks (127.0.0.1 only).",
    )
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="probability of a fault")
    parser.add_argument(
        "--faults",
        default=",".join(FAULT_KINDS),
        help="kinds to draw from: " + ",".join(FAULT_KINDS),
    )
    parser.add_argument(
        "--fault-sequence",
        default="",
        help="faults for the first completion requests in arrival order, e.g. 429,ok,stall",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault RNG")
    parser.add_argument("--retry-after", type=float, default=None, help="Retry-After on 429s")
    parser.add_argument(
        "--reject-json-schema",
        action="store_true",
        help="answer 400 to response_format json_schema, like servers that lack it",
    )
    parser.add_argument("--require-key", default=None, help="answer 401 unless this key is sent")
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=None,
        help="answer 400 like llama.cpp's server to a prompt longer than this (chars / 4)",
    )
    parser.add_argument(
        "--keepalive-timeout",
        type=float,
        default=None,
        help="close a connection idle this many seconds (default: keep it open)",
    )
    parser.add_argument(
        "--seeded-replies",
        action="store_true",
        help="put the request's seed in each reply (OpenAI), so conversations run with "
        "different seeds never say the same thing",
    )
    parser.add_argument("--max-lifetime", type=float, default=900.0, help="exit after seconds")
    parser.add_argument("--ignore-stdin", action="store_true", help="do not exit on stdin EOF")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
