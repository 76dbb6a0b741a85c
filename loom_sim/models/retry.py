"""One retry policy for every provider.

Long runs make tens of thousands of calls; some will hit rate limits, overloaded servers,
dropped connections. Those are retried here — and only here — so every provider behaves the
same and a fix applies everywhere:

* retryable: HTTP 408, 409, 429, 500, 502, 503, 504, 529 (and other 5xx except 501), read
  and connect timeouts, connection errors, a 200 whose body is not the API's JSON;
* every reply has a deadline for the whole of it (:mod:`loom_sim.models.reply_limits`). A
  server silent until the deadline — a long generation, a stuck request — is retried, but
  only once (``max_timeouts``): each try costs the whole timeout, and five would hold one call
  for five of them. A reply that had started (its headers had come) but was still arriving
  when the deadline passed is not retried: the server or the path to it delivers at a
  trickle, which a second try at the same server does not cure;
* the wait is exponential backoff with *full jitter* — ``uniform(0, min(cap, base·2^(n-1)))``,
  which spreads 256 rollouts that failed together instead of having them retry in lockstep;
* a server's ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms`` replaces the
  backoff, capped so a bad header cannot park a run for an hour;
* everything else (400, 401, 403, 404, 422, …) fails at once: repeating it cannot help, and
  the message says what to fix.

Providers describe each failed attempt as an :class:`AttemptFailed` (retryable) or raise a
:class:`ModelError` (final); :meth:`RetryPolicy.run` does the rest. The RNG and the sleep
function are injectable so tests can assert the exact delays without waiting.

The provider's concurrency slot is held only during an attempt, not while waiting to retry,
so one rate-limited conversation does not idle a slot the others could use. Usage is that of
the successful reply: providers do not bill refused (429/5xx) requests.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import re
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

import httpx
import trio

from loom_sim.core.header import redact_url
from loom_sim.models.base import BadModelReply, ModelError, ModelUnavailable, RetriesExhausted
from loom_sim.models.reply_limits import ReplyDeadline, ReplyTooLarge

__all__ = [
    "RETRYABLE_STATUS",
    "AttemptFailed",
    "Faults",
    "RetryPolicy",
    "mask",
    "parse_retry_after",
    "status_error",
    "transport_failure",
]

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
FailureKind = Literal["status", "timeout", "slow", "connect", "malformed"]


class AttemptFailed(Exception):
    """One attempt failed in a way that a later attempt may not.

    ``reason`` is a short phrase for the final message ("HTTP 429 (rate limited)");
    ``retry_after`` the server's requested wait in seconds, if it gave one.
    """

    def __init__(
        self, reason: str, *, kind: FailureKind = "status", retry_after: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.retry_after = retry_after


def _default_rng() -> random.Random:
    return random.Random()


@dataclass
class Faults:
    """What went wrong with model calls, by spec: attempts retried (by reason) and calls that
    failed after their last attempt. A run reports it when it ends and keeps it in run.json, so
    a result that took 300 retries against a rate limit says so."""

    retried: dict[str, dict[str, int]] = field(default_factory=dict)  # spec -> reason -> n
    gave_up: dict[str, int] = field(default_factory=dict)  # spec -> calls

    def retry(self, spec: str, failure: AttemptFailed) -> None:
        by_reason = self.retried.setdefault(spec, {})
        reason = _reason_label(failure)
        by_reason[reason] = by_reason.get(reason, 0) + 1

    def give_up(self, spec: str) -> None:
        self.gave_up[spec] = self.gave_up.get(spec, 0) + 1

    @property
    def empty(self) -> bool:
        return not self.retried and not self.gave_up

    def summary(self) -> str:
        """``"openai/gpt-4.1: 12 retried (HTTP 429 ×9, timeout ×3), 1 failed"`` per spec."""
        parts = []
        for spec in sorted(set(self.retried) | set(self.gave_up)):
            reasons = self.retried.get(spec, {})
            counts = []
            if reasons:
                listed = ", ".join(f"{r} ×{n}" for r, n in sorted(reasons.items()))
                counts.append(f"{sum(reasons.values())} retried ({listed})")
            if self.gave_up.get(spec):  # a trickling reply fails with no retry at all
                counts.append(f"{self.gave_up[spec]} failed" + " after every retry" * bool(reasons))
            text = f"{spec}: " + ", ".join(counts)
            parts.append(text)
        return "; ".join(parts)


def _reason_label(failure: AttemptFailed) -> str:
    """A short, URL-free name for a failure: "HTTP 429", "timeout", "connect", "malformed"."""
    if failure.kind == "status" and failure.reason.startswith("HTTP "):
        return failure.reason.split(" (", 1)[0]
    return {"status": "connection broke"}.get(failure.kind, failure.kind)


@dataclass
class RetryPolicy:
    """How often and how long to retry. Shared by all clients of a run (its state: the jitter
    RNG, and the run's tally of :class:`Faults`)."""

    max_attempts: int = 5
    max_timeouts: int = 2  # attempts of one call that may run out of time
    base_s: float = 0.5
    cap_s: float = 30.0
    retry_after_cap_s: float = 60.0
    rng: random.Random = field(default_factory=_default_rng, repr=False)
    sleep: Callable[[float], Awaitable[object]] = field(default=trio.sleep, repr=False)
    faults: Faults = field(default_factory=Faults, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.max_timeouts < 1:
            raise ValueError("max_attempts and max_timeouts must be at least 1")

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1-based), with full jitter."""
        ceiling = min(self.cap_s, self.base_s * (2 ** (attempt - 1)))
        return self.rng.uniform(0.0, ceiling)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap_s)
        return self.backoff(attempt)

    async def run(self, spec: str, attempt: Callable[[], Awaitable[T]]) -> tuple[T, int]:
        """Call ``attempt`` until it returns; ``(result, attempts used)``.

        ``AttemptFailed`` is retried; after the last attempt it becomes
        :class:`ModelUnavailable` (the last failure was a connection error) or
        :class:`RetriesExhausted`; so does the ``max_timeouts``-th attempt that timed out.
        Any ``ModelError`` passes through at once.
        """
        number = 1
        timeouts = 0
        while True:
            try:
                return await attempt(), number
            except AttemptFailed as failure:
                timeouts += failure.kind == "timeout"
                last = number >= self.max_attempts or timeouts >= self.max_timeouts
                if last or failure.kind == "slow":
                    self.faults.give_up(spec)
                    raise _exhausted(spec, failure, number) from failure
                self.faults.retry(spec, failure)
                await self.sleep(self.delay(number, failure.retry_after))
                number += 1


def _exhausted(spec: str, failure: AttemptFailed, attempts: int) -> ModelError:
    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    if failure.kind == "connect":
        return ModelUnavailable(
            f"{spec} could not be reached after {tries} ({failure.reason}); "
            "check that the server is running and the base URL is right."
        )
    if failure.kind in ("timeout", "slow"):
        return RetriesExhausted(
            f"{spec} failed {tries}: {failure.reason}; raise the timeout or check the server."
        )
    advice = {
        "malformed": "check that the base URL points at a compatible API",
    }.get(failure.kind, "wait and retry, or lower the concurrency for this provider")
    return RetriesExhausted(f"{spec} failed {tries}, the last with {failure.reason}; {advice}.")


# ─── classifying what went wrong ────────────────────────────────────────────


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(float(value) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


_STATUS_WORDS = {
    408: "request timeout",
    409: "conflict",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "service unavailable",
    504: "gateway timeout",
    529: "overloaded",
}


def mask(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret replaced by ``***`` (servers sometimes echo keys)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _server_message(body: bytes, secrets: tuple[str, ...]) -> str:
    """The ``error.message`` of an API error body, else a short excerpt of the body."""
    text = ""
    try:
        payload = json.loads(body)
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            text = str(error.get("message") or "")
        elif isinstance(error, str):
            text = error
        elif isinstance(payload, dict) and isinstance(payload.get("detail"), str):
            text = payload["detail"]
    except (ValueError, UnicodeDecodeError):
        text = body[:200].decode("utf-8", "replace")
    text = " ".join(mask(text, secrets).split())
    return text if len(text) <= 160 else text[:159] + "…"


def status_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    spec: str,
    model: str,
    base_url: str,
    key_env: str,
    has_key: bool,
    secrets: tuple[str, ...] = (),
) -> AttemptFailed | ModelError:
    """What an HTTP error status means: an :class:`AttemptFailed` to retry, or a final error."""
    base_url = redact_url(base_url) or base_url  # messages are written to disk: no credentials
    if status in RETRYABLE_STATUS or (status >= 500 and status != 501):
        words = _STATUS_WORDS.get(status, "server error")
        return AttemptFailed(
            f"HTTP {status} ({words})", kind="status", retry_after=parse_retry_after(headers)
        )
    if 300 <= status < 400:
        place = " ".join(mask(headers.get("location") or "", secrets).split())[:200]
        to = f" to {place}" if place else ""
        return ModelError(
            f"{spec}: the server at {base_url} answered HTTP {status}, a redirect{to}; "
            "loom-sim does not follow redirects: use the final address if you trust it."
        )
    detail = _server_message(body, secrets)
    said = f": {detail}" if detail else ""
    if status in (401, 403):
        if has_key:
            return ModelError(
                f"{spec}: the key in {key_env} was rejected (HTTP {status}{said}); "
                "check that it is valid and allowed to use this model."
            )
        return ModelError(
            f"{spec}: the server at {base_url} requires an API key (HTTP {status}); set {key_env}."
        )
    if status == 404:
        return ModelError(
            f"{spec}: model {model!r} not found at {base_url} (HTTP 404{said}); "
            "check the model name and the base URL."
        )
    overflow = context_overflow(body)
    if overflow is not None:
        size = f"{overflow} tokens" if overflow > 0 else "its window"
        setting = f"{{{spec}: {overflow}}}" if overflow > 0 else f"{{{spec}: N}}"
        return ContextOverflow(
            f"{spec}: the conversation no longer fits the model's context at {base_url} "
            f"({size}; HTTP {status}{said}); set models.context_tokens: {setting} in the "
            "config so loom-sim cuts the history to fit, or start the server with a larger "
            "context.",
            limit=overflow if overflow > 0 else None,
        )
    return ModelError(
        f"{spec}: the server rejected the request (HTTP {status}{said}); "
        "check the model name and the request settings."
    )


class ContextOverflow(ModelError):
    """The server refused a request longer than its context window; ``limit``: its size in
    tokens, when the server said."""

    def __init__(self, message: str, *, limit: int | None = None):
        super().__init__(message)
        self.limit = limit


#: How servers say a request is longer than their context, and where they give the size:
#: llama.cpp ("exceeds the available context size", n_ctx), llama-cpp-python ("exceed context
#: window of N"), OpenAI and vLLM ("maximum context length is N tokens").
_OVERFLOW = re.compile(
    rb"exceed\w* (?:the )?(?:available )?context|context_length_exceeded|maximum context length"
    rb"|context window|prompt is too long",
    re.I,
)
_LIMITS = (
    re.compile(rb'"n_ctx"\s*:\s*(\d+)'),
    re.compile(rb"context window of (\d+)", re.I),
    re.compile(rb"maximum context length is (\d+)", re.I),
)


def context_overflow(body: bytes) -> int | None:
    """None when ``body`` is not about the context being too small; else the context size it
    states (0 when it states none)."""
    if not _OVERFLOW.search(body):
        return None
    for pattern in _LIMITS:
        found = pattern.search(body)
        if found:
            return int(found.group(1))
    return 0


def transport_failure(
    exc: httpx.TransportError, *, spec: str, base_url: str, timeout_s: float
) -> AttemptFailed | ModelError:
    """An httpx transport error as a retryable failure with a plain reason (or, for a URL
    that can never work or a reply past the size cap, a final error)."""
    base_url = redact_url(base_url) or base_url  # messages are written to disk: no credentials
    if isinstance(exc, ReplyTooLarge):
        where = "" if base_url in spec else f" from {base_url}"
        return BadModelReply(f"{spec}: the reply{where} {exc.what}; loom-sim stopped reading it.")
    if isinstance(exc, ReplyDeadline):
        return AttemptFailed(exc.reason, kind="slow" if exc.started else "timeout")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.ProxyError):
        return ModelError(
            f"{spec}: cannot send to {base_url} ({_os_reason(exc)}); check the base URL "
            "and any proxy settings."
        )
    if isinstance(exc, httpx.ConnectTimeout):
        return AttemptFailed(f"no connection to {base_url} within the timeout", kind="connect")
    if isinstance(exc, httpx.TimeoutException):
        return AttemptFailed(f"no answer within {timeout_s:g} s", kind="timeout")
    if isinstance(exc, httpx.ConnectError):
        return AttemptFailed(f"cannot connect to {base_url}: {_os_reason(exc)}", kind="connect")
    if isinstance(exc, httpx.RemoteProtocolError):
        return AttemptFailed("the server closed the connection mid-reply", kind="status")
    return AttemptFailed(f"the connection broke mid-request ({type(exc).__name__})", kind="status")


def _os_reason(exc: BaseException) -> str:
    """The innermost OS error's words ("connection refused"), found through causes and
    exception groups (trio reports a refused connect as a group of per-address errors)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and not isinstance(current, socket.gaierror):
            if current.errno and current.errno > 0:
                return os.strerror(current.errno).lower()
        if isinstance(current, OSError) and current.strerror:
            return current.strerror.lower()
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
    text = " ".join(str(exc).split()) or "connection failed"
    return text if len(text) <= 80 else text[:79] + "…"
