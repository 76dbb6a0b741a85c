"""What the HTTP providers (OpenAI, Anthropic) share: pools, and one attempt of one POST.

The providers differ in how they shape the request and read the reply; sending it, the
limiter, the timeout, turning status codes and network errors into retryable or final
failures, and keeping the key out of every message are the same, so they live here.

**Why a fast path.** A run keeps hundreds of conversations in flight against servers that
answer in milliseconds (vLLM, llama.cpp, the fake server), so the framework's CPU per call
decides throughput. Measured on this machine against the zero-latency fake server,
``httpx.AsyncClient.post`` costs ~0.4 ms of CPU per call sequentially and 0.6–0.85 ms with
64 calls in flight: most of it is request/response model building, cookies, auth and
redirect plumbing we never use, and httpcore's connection pool, which rescans every
connection (quadratically, in ``_assign_requests_to_connections``) and polls each idle socket
on every request and every release. So for plain-``http://`` servers with no proxy in the
environment, :class:`HTTPPool` keeps an O(1) free list of keep-alive connections, each a
bare socket speaking the little of HTTP/1.1 a model call needs (:mod:`loom_sim.models.http11`,
which says why not httpcore's connection, nor h11). ``https://`` URLs and proxied ones
(remote APIs, where a call takes seconds and TLS, proxies and ``SSL_CERT_FILE`` matter more
than a fraction of a millisecond) go through ``httpx.AsyncClient`` unchanged.

Both paths share the rest: the body arrives encoded (``msgspec``), URL, headers and timeouts
are built once per client, calls wait for a connection slot in trio (cheap) rather than in a
pool queue, and errors are classified by :mod:`loom_sim.models.retry`.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
import trio

from loom_sim.models.base import CallLimiter, ModelError, ModelResponse, Usage
from loom_sim.models.endpoints import Endpoint
from loom_sim.models.http11 import HTTP11Connection, Reply
from loom_sim.models.pricing import PriceTable
from loom_sim.models.reply_limits import (
    MAX_REPLY_BYTES,
    Received,
    ReplyDeadline,
    check_declared,
    read_capped,
)
from loom_sim.models.retry import AttemptFailed, RetryPolicy, status_error, transport_failure

__all__ = ["HTTPModelClient", "HTTPPool", "check_base_url", "is_loopback"]

_NO_LIMIT = contextlib.nullcontext()
_DEFAULT_PRICES = PriceTable()
_KEEPALIVE_S = 30.0


class Slot:
    """``async with`` a ``trio.CapacityLimiter`` that yields to the scheduler only when it must
    wait. A limiter's own ``async with`` always yields, and a call passes two of them: with
    hundreds of calls in flight those idle round trips through the scheduler add up."""

    __slots__ = ("limiter",)

    def __init__(self, limiter: CallLimiter) -> None:
        self.limiter = limiter

    async def __aenter__(self) -> None:
        try:
            self.limiter.acquire_nowait()
        except trio.WouldBlock:
            await self.limiter.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.limiter.release()


def is_loopback(base_url: str) -> bool:
    host = (httpx.URL(base_url).host or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def check_base_url(spec: str, base_url: str) -> str:
    """``base_url`` without a trailing slash; ``ModelError`` unless it is an http(s) URL."""
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError):
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ModelError(
            f"{spec}: the base URL {base_url!r} is not an http(s) URL; "
            "write it like http://127.0.0.1:8000/v1."
        )
    return base_url.rstrip("/")


def _proxied(url: httpx.URL) -> bool:
    """Whether the environment's proxy settings apply to ``url`` (then httpx handles it)."""
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(url.scheme) or proxies.get("all")):
        return False
    # in the standard library since 3.x, though typeshed does not list it
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return not bypass(url.host, proxies)


@dataclass(frozen=True)
class _Target:
    """One client's endpoint, prepared once for both paths."""

    url: httpx.URL
    headers: dict[str, str]
    timeout: httpx.Timeout
    deadline_s: float  # for the whole reply, body included
    max_bytes: int  # of the reply's body
    connect_s: float
    path: bytes  # the request target: the URL's path and query
    fast_headers: tuple[tuple[bytes, bytes], ...]  # Host and ``headers``, for the fast path


class HTTPPool:
    """Connections to one server, shared by the clients of a few rollouts.

    ``fast`` (default: plain ``http://`` and no proxy in the environment) selects the
    free-list path described in the module docstring; otherwise ``http`` — an
    ``httpx.AsyncClient`` — sends. ``slots`` bounds the calls in flight to the number of
    connections, so no call ever queues inside a connection pool.

    ``trust_env`` is off for loopback servers: a proxy set in the environment must not
    capture calls to a local model server.
    """

    def __init__(
        self, base_url: str, *, max_connections: int = 16, fast: bool | None = None
    ) -> None:
        url = httpx.URL(base_url)
        trust_env = not is_loopback(base_url)
        if fast is None:
            fast = url.scheme == "http" and not (trust_env and _proxied(url))
        self.fast = fast
        self.max_connections = max_connections
        self._trust_env = trust_env
        self._http: httpx.AsyncClient | None = None
        self.slots = trio.CapacityLimiter(max_connections)
        self._slot = Slot(self.slots)
        self._host = url.host
        self._port = url.port or 80
        self._idle: list[HTTP11Connection] = []
        self._closed = False

    def __repr__(self) -> str:
        return f"HTTPPool(max_connections={self.max_connections}, fast={self.fast})"

    @property
    def http(self) -> httpx.AsyncClient:
        """The httpx client, built on first use: building one loads the CA bundle (~14 ms),
        which 32 pools of a 256-rollout run on the fast path would pay for nothing."""
        if self._http is None:
            limits = httpx.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_connections,  # else httpcore drops idle ones
                keepalive_expiry=_KEEPALIVE_S,
            )
            self._http = httpx.AsyncClient(trust_env=self._trust_env, limits=limits, timeout=None)
        return self._http

    def target(
        self,
        url: str,
        headers: Mapping[str, str],
        timeout_s: float,
        max_bytes: int = MAX_REPLY_BYTES,
    ) -> _Target:
        parsed = httpx.URL(url)
        # Connect fast or not at all; the whole reply within ``timeout_s`` (the deadline in
        # ``post``: per-read timeouts alone let a server dripping bytes hold a call forever).
        # The pool wait is unbounded: the limiters, not the pool, decide how many calls run.
        connect = min(timeout_s, 10.0)
        fast_headers = [(b"Host", parsed.netloc)]
        fast_headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        return _Target(
            url=parsed,
            headers=dict(headers),
            timeout=httpx.Timeout(timeout_s, connect=connect, pool=None),
            deadline_s=timeout_s,
            max_bytes=max_bytes,
            connect_s=connect,
            path=parsed.raw_path,
            fast_headers=tuple(fast_headers),
        )

    async def post(self, target: _Target, body: bytes) -> Reply:
        """POST ``body``; network failures raise ``httpx.TransportError`` on both paths, and
        so do a reply that misses its deadline (``ReplyDeadline``) or passes its size cap
        (``ReplyTooLarge``). The deadline starts once a connection slot is ours: waiting for
        one is the run's own queue, not the server's slowness."""
        async with self._slot:
            received = Received()
            with trio.move_on_after(target.deadline_s):
                if not self.fast:
                    return await self._post_httpx(target, body, received)
                return await self._post_fast(target, body, received)
            raise ReplyDeadline(target.deadline_s, received)

    async def _post_httpx(self, target: _Target, body: bytes, received: Received) -> Reply:
        async with self.http.stream(
            "POST", target.url, content=body, headers=target.headers, timeout=target.timeout
        ) as reply:
            received.started = True
            if "content-encoding" not in reply.headers:
                check_declared(reply.headers.get("content-length"), target.max_bytes)
            content = await read_capped(reply.aiter_bytes(), target.max_bytes, received)
            return Reply(reply.status_code, reply.headers, content)

    async def _post_fast(self, target: _Target, body: bytes, received: Received) -> Reply:
        headers = (*target.fast_headers, (b"Content-Length", b"%d" % len(body)))
        conn = await self._checkout()
        try:
            reply = await conn.post(
                target.path,
                headers,
                body,
                max_bytes=target.max_bytes,
                received=received,
                connect_s=target.connect_s,
            )
        except BaseException:
            with trio.CancelScope(shield=True):  # a half-used connection is never reused
                await conn.aclose()
            raise
        if not self._closed and conn.settled():  # whether still open: asked at checkout
            self._idle.append(conn)
        else:
            await conn.aclose()
        return reply

    async def _checkout(self) -> HTTP11Connection:
        """The most recently used live connection, or a new one (connected on first use)."""
        idle = self._idle
        while idle:
            conn = idle.pop()
            if conn.reusable():  # also false when the server closed it while it sat idle
                return conn
            await conn.aclose()
        return HTTP11Connection(self._host, self._port, keepalive_s=_KEEPALIVE_S)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.aclose()
        if self._http is not None:
            await self._http.aclose()


class HTTPModelClient:
    """Base of :class:`OpenAIClient` and :class:`AnthropicClient`, and their one constructor.

    A client names its provider's :class:`~loom_sim.models.endpoints.Endpoint` (the server
    and key when none is given) and its API's ``path``, and says how a key goes into its
    headers and how large its model's context is; the rest is made here the same way for
    both.
    """

    provider: ClassVar[str]
    endpoint: ClassVar[Endpoint]
    path: ClassVar[str]  # the API's path below the base URL

    spec: str
    context_tokens: int

    def __init__(
        self,
        spec: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        env: Mapping[str, str] | None = None,
        pool: HTTPPool | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        limiter: CallLimiter | None = None,
        prices: PriceTable | None = None,
        context_tokens: int | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        base_url, api_key = self.endpoint.resolve(base_url, api_key, env)
        headers = self._headers(api_key)
        self.spec = spec
        self.model = spec.split("/", 1)[1]
        self.base_url = check_base_url(spec, base_url)
        self.context_tokens = self._context(spec, context_tokens)
        self._secrets = (api_key,) if api_key else ()
        self._has_key = bool(api_key)
        self._owns_pool = pool is None
        self.pool = pool if pool is not None else HTTPPool(self.base_url)
        self.timeout_s = timeout_s
        self._target = self.pool.target(
            self.base_url + self.path,
            {"Content-Type": "application/json", **headers},
            timeout_s,
            max_reply_bytes,
        )
        self.retry = retry if retry is not None else RetryPolicy()
        self._limit = Slot(limiter) if limiter is not None else _NO_LIMIT
        self._prices = prices if prices is not None else _DEFAULT_PRICES
        self._configure()

    @property
    def key_env(self) -> str:
        return self.endpoint.key_env

    def _headers(self, key: str | None) -> dict[str, str]:
        """The headers every request carries (the key among them, when there is one)."""
        raise NotImplementedError

    def _context(self, spec: str, given: int | None) -> int:
        """The model's context size: ``given``, else what is known of the model."""
        raise NotImplementedError

    def _configure(self) -> None:
        """What a client decides once it knows its server and model (nothing, here)."""

    @property
    def http(self) -> httpx.AsyncClient:
        """The httpx client this model's calls share with its pool (built on first use)."""
        return self.pool.http

    def __repr__(self) -> str:  # never the headers: they hold the key
        return f"{type(self).__name__}({self.spec!r}, base_url={self.base_url!r})"

    def count_tokens(self, text: str) -> int:
        """A rough count (≈4 characters a token): the exact tokenizer is the server's."""
        return (len(text) + 3) // 4

    async def aclose(self) -> None:
        if self._owns_pool:
            await self.pool.aclose()

    async def _send(self, body: bytes) -> Reply:
        """One attempt's POST, whatever its status; network errors as ``AttemptFailed``."""
        async with self._limit:
            try:
                return await self.pool.post(self._target, body)
            except httpx.TransportError as exc:
                raise transport_failure(
                    exc, spec=self.spec, base_url=self.base_url, timeout_s=self.timeout_s
                ) from exc

    async def _post(self, body: bytes) -> bytes:
        """One attempt: the 200 reply's body, or ``AttemptFailed`` / ``ModelError``."""
        reply = await self._send(body)
        if reply.status == 200:
            return reply.content
        raise self._status_error(reply)

    def _status_error(self, reply: Reply) -> AttemptFailed | ModelError:
        return status_error(
            reply.status,
            reply.headers,
            reply.content,
            spec=self.spec,
            model=self.model,
            base_url=self.base_url,
            key_env=self.key_env,
            has_key=self._has_key,
            secrets=self._secrets,
        )

    def _response(
        self,
        text: str,
        input_tokens: int,
        output_tokens: int,
        finish_reason: str | None,
        attempts: int,
        started: float,
        parsed: Any = None,
    ) -> ModelResponse:
        cost = self._prices.cost(self.spec, input_tokens, output_tokens)
        return ModelResponse(
            text=text,
            usage=Usage(input_tokens, output_tokens, cost),
            model=self.spec,
            finish_reason=finish_reason,
            attempts=attempts,
            latency_s=time.perf_counter() - started,
            parsed=parsed,
        )
