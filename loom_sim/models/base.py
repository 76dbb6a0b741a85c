"""One protocol for every model call.

Every role (persona, interlocutor, adversary, judge) calls its model through
:class:`ModelClient`. Providers differ only in how they move bytes; retries, limits, token
accounting and JSON repair live in one place each, so a fix there fixes every role.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from loom_sim.errors import LoomError

Role = Literal["system", "user", "assistant"]


class ChatMessage(msgspec.Struct, frozen=True):
    role: Role
    content: str


class ModelRequest(msgspec.Struct, frozen=True):
    messages: list[ChatMessage]
    max_tokens: int = 256
    temperature: float = 0.8
    seed: int | None = None
    # Ask for JSON matching this schema: providers with native structured output use it, the
    # others get the schema in the prompt; either way the reply goes through the tolerant parser.
    json_schema: dict[str, Any] | None = None
    stop: list[str] | None = None
    # A GBNF grammar (llama.cpp's syntax) the reply must follow, for a reply whose shape can be
    # written down (one sentence ending in "?"). A client that can constrain its sampling (the
    # embedded model) writes to it; the others ignore it, and the caller's checks still apply.
    grammar: str | None = None


def schema_text(schema: Mapping[str, Any]) -> str:
    """A JSON Schema as prompts show it: compact JSON (fewer tokens than spaced)."""
    return msgspec.json.encode(schema).decode()


def enforces_schema(model: object) -> bool:
    """Whether ``model`` holds its reply to a request's JSON Schema itself (llama.cpp turns the
    schema into a grammar the sampler cannot leave): a prompt then need not spell it out. A
    client says so with an ``enforces_schema`` attribute; none means no."""
    return bool(getattr(model, "enforces_schema", False))


def greedy_is_deterministic(model: object) -> bool:
    """Whether ``model`` gives the same reply to the same request at temperature 0, whatever
    the request's random seed (llama.cpp on one machine does; a hosted model need not, and a
    scripted one may answer each attempt differently on purpose): asking it again unchanged is
    then wasted."""
    return bool(getattr(model, "greedy_is_deterministic", False))


def answer_tokens(model: object, schema: Mapping[str, Any], max_tokens: int) -> int:
    """The most tokens ``model`` may write answering a request of ``schema`` with
    ``max_tokens``: what a prompt must leave free of its context. A client that writes less
    than asked (the embedded model writes a schema's keys and short values) says so with an
    ``answer_tokens`` method; otherwise it is ``max_tokens``."""
    method = getattr(model, "answer_tokens", None)
    return int(method(schema, max_tokens)) if callable(method) else max_tokens


def counts_exactly(model: object) -> bool:
    """Whether ``model.count_tokens`` is its tokenizer's count now (an in-process model
    estimates until it is loaded)."""
    return bool(getattr(model, "counts_exactly", True))


class Usage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None: the price is unknown (never silently 0)

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost
        )


class ModelResponse(msgspec.Struct, frozen=True):
    text: str
    usage: Usage
    model: str  # the spec string that answered, e.g. "openai/gpt-4.1"
    finish_reason: str | None = None
    attempts: int = 1  # 1 + retries
    latency_s: float = 0.0
    parsed: Any = None  # the JSON object, when json_schema was given and it parsed
    cached: bool = False  # served from the response cache (no call was made; cost 0)


@runtime_checkable
class ModelClient(Protocol):
    """A model behind a spec string. Implementations are safe to share between trio tasks."""

    spec: str
    context_tokens: int  # the model's context window, for history truncation

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    def count_tokens(self, text: str) -> int: ...

    async def aclose(self) -> None: ...


class CallLimiter(Protocol):
    """What bounds a provider's calls in flight: a ``trio.CapacityLimiter`` in one process, or
    anything with its acquire/release surface (a cluster's limiter, shared by every worker).
    ``acquire_nowait`` raises ``trio.WouldBlock`` when the caller has to wait."""

    def acquire_nowait(self) -> None: ...

    async def acquire(self) -> None: ...

    def release(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Any: ...


@runtime_checkable
class Preloadable(Protocol):
    """A client whose model takes a while to load (an in-process model): a run loads it at
    start-up, in a worker thread, instead of inside its first call."""

    async def preload(self) -> float | None:
        """Load now if not loaded yet; the seconds it took (None: it already was)."""
        ...


# ─── errors ─────────────────────────────────────────────────────────────────


class ModelError(LoomError):
    """A model call that cannot succeed; the message says which model and what to do."""


class MissingAPIKey(ModelError):
    """Raised before any call when a provider's key is not in the environment."""


class ModelUnavailable(ModelError):
    """The server cannot be reached (refused, DNS, TLS) after all retries."""


class RetriesExhausted(ModelError):
    """Every attempt failed with a retryable error (429, 5xx, timeout)."""


class BadModelReply(ModelError):
    """The server answered, but not with something usable (malformed body, no JSON)."""
