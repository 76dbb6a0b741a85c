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
:class:`FakeOpenAIServer` as a context manager.

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
import select
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from typing import Any

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
_ECHO_WORDS = 16


# ─── the reply generator ────────────────────────────────────────────────────


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # Anthropic content blocks
                return " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _reply_text(messages: list[dict[str, Any]], seed: Any = None) -> str:
    words = _last_user_text(messages).split()
    tag = f" ({seed})" if seed is not None else ""
    return f"reply {len(messages)}{tag}: " + " ".join(words[:_ECHO_WORDS])


def example_for_schema(schema: Any, text: str, n: int, depth: int = 0) -> Any:
    """A small instance of ``schema`` (the common subset of JSON Schema models are given)."""
    if not isinstance(schema, dict) or depth > 6:
        return {"reply": text}
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return example_for_schema(schema[key][0], text, n, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        if not props:
            return {"reply": text}
        return {k: example_for_schema(v, text, n, depth + 1) for k, v in props.items()}
    if kind == "array":
        return [example_for_schema(schema.get("items", {}), text, n, depth + 1)]
    if kind == "string":
        return text
    if kind == "integer":
        return n
    if kind == "number":
        return n + 0.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return {"reply": text}


def _word_count(messages: list[dict[str, Any]], extra: str = "") -> int:
    total = len(extra.split())
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content.split())
    return total


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
            payload = json.loads(body)
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
            self._send(_response(200, self._anthropic(payload, messages)), keep_alive)
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
            self._send(_response(200, self._openai(payload, messages, fmt, seed)), keep_alive)
            state.last_reply = time.monotonic()

    @staticmethod
    def _openai(
        payload: dict[str, Any], messages: list[Any], fmt: dict[str, Any], seed: Any = None
    ) -> bytes:
        text = _reply_text(messages, seed)
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            content = json.dumps(example_for_schema(schema, text, len(messages)))
        elif fmt.get("type") == "json_object":
            content = json.dumps({"reply": text, "n": len(messages)})
        else:
            content = text
        out = {
            "id": f"chatcmpl-{len(messages)}",
            "object": "chat.completion",
            "model": payload.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": _word_count(messages),
                "completion_tokens": len(content.split()),
                "total_tokens": _word_count(messages) + len(content.split()),
            },
        }
        return json.dumps(out).encode()

    @staticmethod
    def _anthropic(payload: dict[str, Any], messages: list[Any]) -> bytes:
        text = _reply_text(messages)
        system = payload.get("system") or ""
        if isinstance(system, list):
            system = " ".join(b.get("text", "") for b in system if isinstance(b, dict))
        if "JSON" in system:
            obj = json.dumps({"reply": text, "n": len(messages)})
            content = f"Here is the object you asked for:\n```json\n{obj}\n```\nAnything else?"
        else:
            content = text
        out = {
            "id": f"msg_{len(messages)}",
            "type": "message",
            "role": "assistant",
            "model": payload.get("model", "fake"),
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": _word_count(messages, system),
                "output_tokens": len(content.split()),
            },
        }
        return json.dumps(out).encode()


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


# ─── the in-process handle ──────────────────────────────────────────────────


class FakeOpenAIServer:
    """Starts the fake server in a subprocess; ``with FakeOpenAIServer(latency=0.1) as s:``.

    Options mirror the command line: ``latency``, ``fault_rate``, ``faults`` (iterable or
    comma string), ``fault_sequence``, ``seed``, ``retry_after``, ``reject_json_schema``,
    ``require_key``, ``context_tokens``, ``keepalive_timeout``, ``seeded_replies``,
    ``max_lifetime``.
    """

    def __init__(self, **options: Any) -> None:
        known = {a.dest for a in build_parser()._actions} - {"help", "port", "ignore_stdin"}
        unknown = set(options) - known
        if unknown:
            raise TypeError(f"unknown FakeOpenAIServer options: {', '.join(sorted(unknown))}")
        self.options = options
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the fake server is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (with ``/v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic-style base URL (without ``/v1``, like ``ANTHROPIC_BASE_URL``)."""
        return self.url

    def _argv(self) -> list[str]:
        argv = [sys.executable, "-m", "loom_sim.testing.fake_openai", "--port", "0"]
        for name, value in self.options.items():
            if value is None or value is False:
                continue
            flag = "--" + name.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif isinstance(value, list | tuple | set | frozenset):
                argv += [flag, ",".join(str(v) for v in value)]
            else:
                argv += [flag, str(value)]
        return argv

    def start(self, timeout: float = 15.0) -> FakeOpenAIServer:
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self._proc = subprocess.Popen(
            self._argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._proc.stdout], [], [], 0.1)
            if ready:
                line = self._proc.stdout.readline()
                break
            if self._proc.poll() is not None:
                break
        if not line.startswith(b"LISTENING "):
            self.stop()
            raise RuntimeError(f"the fake server did not start (said {line!r})")
        self.port = int(line.split()[1])
        return self

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/stats", timeout=5) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()  # EOF: the server exits on its own
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    main()
