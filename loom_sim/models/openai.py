"""OpenAI chat completions — and every server that speaks the same API.

``openai/<model>`` talks to api.openai.com by default; a ``base_url`` (argument, else
``OPENAI_BASE_URL``) points it at vLLM, Ollama, llama.cpp's server, OpenRouter or the fake
server in :mod:`loom_sim.testing.fake_openai`. Local servers need no key, so the key is
required only for the default base URL (:class:`~loom_sim.models.hub.ModelHub` checks that
before the first call).

Structured output: with ``json_schema`` the request carries OpenAI's native
``response_format: {type: json_schema, strict: false}`` (not strict: strict mode rejects many
ordinary schemas). Servers that answer 400 to it get ``{type: json_object}`` next, then no
``response_format`` at all; the client remembers the downgrade so a run pays for it once, and
in the weaker modes the schema goes into a system message. The reply always goes through the
tolerant parser; ``parsed`` is ``None`` when even that finds no JSON (the caller decides
whether to re-ask).

OpenAI's reasoning models (o1, o3, o4-mini, gpt-5…) take ``max_completion_tokens`` and reject
``temperature`` and ``stop``; the client adapts to them by name. Against other servers it
sends the classic ``max_tokens`` that all of them understand.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from loom_sim.models._http import HTTPModelClient
from loom_sim.models.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    schema_text,
)
from loom_sim.models.endpoints import OPENAI
from loom_sim.models.json_repair import parse_for_schema
from loom_sim.models.pricing import match_family
from loom_sim.models.retry import AttemptFailed

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIClient", "schema_instruction"]

DEFAULT_OPENAI_BASE_URL = OPENAI.default_base_url
JsonMode = Literal["json_schema", "json_object", "none"]

_CONTEXT_TOKENS = {
    "openai/gpt-4o": 128_000,
    "openai/gpt-4o-mini": 128_000,
    "openai/gpt-4.1": 1_047_576,
    "openai/gpt-4.1-mini": 1_047_576,
    "openai/gpt-4.1-nano": 1_047_576,
    "openai/gpt-5": 400_000,
    "openai/gpt-5-mini": 400_000,
    "openai/gpt-5-nano": 400_000,
    "openai/o1": 200_000,
    "openai/o3": 200_000,
    "openai/o3-mini": 200_000,
    "openai/o4-mini": 200_000,
    "openai/gpt-4-turbo": 128_000,
    "openai/gpt-3.5-turbo": 16_385,
}
_UNKNOWN_CONTEXT = 8_192  # a conservative guess for servers we know nothing about
_REASONING = re.compile(r"^(o\d|gpt-5)")
_FORMAT_COMPLAINT = re.compile(rb"response_format|json_schema|json_object|schema", re.I)


def _refuses_format(status: int, body: bytes) -> bool:
    """Whether an error reply says the server does not take our response_format.

    Most servers answer 400 or 422; llama-cpp-python's server answers a request validation
    error with 500, so a 500 counts when its body is a validation error about the format.
    """
    if not _FORMAT_COMPLAINT.search(body):
        return False
    return status in (400, 422) or (status == 500 and b"validation error" in body.lower())


# ─── wire types: encoded and decoded by msgspec, no intermediate dicts ─────


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    messages: list[ChatMessage]
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    response_format: dict[str, Any] | None = None


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Completion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_Completion).decode


class _Downgrade(Exception):
    """The server refused our response_format: send again with a weaker one."""


def schema_instruction(schema: Mapping[str, Any]) -> str:
    """The system message that carries a schema when the API cannot."""
    return (
        "Reply with a single JSON object, and nothing else, that matches this JSON Schema:\n"
        + schema_text(schema)
    )


def _with_instruction(messages: list[ChatMessage], text: str) -> list[ChatMessage]:
    if messages and messages[0].role == "system":
        first = ChatMessage("system", messages[0].content + "\n\n" + text)
        return [first, *messages[1:]]
    return [ChatMessage("system", text), *messages]


class OpenAIClient(HTTPModelClient):
    """``openai/<model>`` over the chat completions API."""

    provider = "openai"
    endpoint = OPENAI
    path = "/chat/completions"

    def _headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    def _context(self, spec: str, given: int | None) -> int:
        if given is not None:
            return given
        return match_family(spec, _CONTEXT_TOKENS) or _UNKNOWN_CONTEXT

    def _configure(self) -> None:
        official = self.base_url == DEFAULT_OPENAI_BASE_URL
        self._official = official
        self._reasoning = official and bool(_REASONING.match(self.model))
        self.json_mode: JsonMode = "json_schema"

    def _body(self, request: ModelRequest, mode: JsonMode) -> bytes:
        messages = request.messages
        response_format = None
        if request.json_schema is not None:
            if mode == "json_schema":
                response_format = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "reply",
                        "schema": request.json_schema,
                        "strict": False,
                    },
                }
            else:
                messages = _with_instruction(messages, schema_instruction(request.json_schema))
                if mode == "json_object":
                    # llama.cpp's server constrains generation to `schema` with a grammar;
                    # others ignore the key, or refuse it, and the next downgrade drops it.
                    response_format = {"type": "json_object", "schema": request.json_schema}
        if self._official:
            body = _Body(self.model, messages, max_completion_tokens=request.max_tokens)
        else:
            body = _Body(self.model, messages, max_tokens=request.max_tokens)
        if not self._reasoning:
            body.temperature = request.temperature
            body.stop = request.stop or None
        body.seed = request.seed
        body.response_format = response_format
        return _encode(body)

    async def _attempt(self, body: bytes, sent_format: bool) -> _Completion:
        reply = await self._send(body)
        if reply.status != 200:
            if sent_format and _refuses_format(reply.status, reply.content):
                raise _Downgrade
            raise self._status_error(reply)
        try:
            completion = _decode(reply.content)
        except msgspec.DecodeError:
            raise AttemptFailed("a reply that is not the API's JSON", kind="malformed") from None
        if not completion.choices:
            raise AttemptFailed("a reply without choices", kind="malformed")
        return completion

    async def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        wants_json = request.json_schema is not None
        while True:
            mode = self.json_mode
            body = self._body(request, mode)
            sent_format = wants_json and mode != "none"
            try:
                completion, attempts = await self.retry.run(
                    self.spec, functools.partial(self._attempt, body, sent_format)
                )
                break
            except _Downgrade:
                if self.json_mode == mode:  # another task may have downgraded already
                    self.json_mode = "json_object" if mode == "json_schema" else "none"
        choice = completion.choices[0]
        text = choice.message.content or ""
        usage = completion.usage
        if usage is None:  # some servers omit it: estimate rather than claim zero
            input_tokens = sum(self.count_tokens(m.content) for m in request.messages)
            output_tokens = self.count_tokens(text)
        else:
            input_tokens, output_tokens = usage.prompt_tokens, usage.completion_tokens
        parsed = None
        if request.json_schema is not None:
            parsed = parse_for_schema(text, request.json_schema, model=self.spec)
        return self._response(
            text, input_tokens, output_tokens, choice.finish_reason, attempts, started, parsed
        )
