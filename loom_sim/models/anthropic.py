"""Anthropic's Messages API.

``anthropic/<model>`` with the key from ``ANTHROPIC_API_KEY`` (header ``x-api-key``) and the
base URL from the argument, else ``ANTHROPIC_BASE_URL``, else https://api.anthropic.com — the
same conventions as Anthropic's own SDK, so a proxy configured for it works here too.

The Messages API differs from chat completions in ways the caller should not see:

* system messages go to the top-level ``system`` field (all of them, in order);
* roles must alternate, so consecutive same-role messages are merged (joined by a blank
  line), and a conversation that opens with the assistant gets a neutral first user turn;
* ``temperature`` is clamped to Anthropic's range [0, 1]; there is no ``seed``, so replies
  are not reproducible even with one (the request's seed is ignored);
* structured output: the schema goes into the system prompt and the reply through the
  tolerant parser. Chosen over forced tool use because it works with every Claude model and
  every Anthropic-compatible proxy, and a tool call's arguments would need the same repair
  when the reply is cut off at ``max_tokens`` anyway.

Retries, limits, timeouts and accounting are shared with the OpenAI client.
"""

from __future__ import annotations

import time

import msgspec

from loom_sim.models._http import HTTPModelClient
from loom_sim.models.base import ChatMessage, ModelRequest, ModelResponse
from loom_sim.models.endpoints import ANTHROPIC
from loom_sim.models.json_repair import parse_for_schema
from loom_sim.models.openai import schema_instruction
from loom_sim.models.retry import AttemptFailed

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_BASE_URL", "AnthropicClient", "to_messages_api"]

DEFAULT_ANTHROPIC_BASE_URL = ANTHROPIC.default_base_url
ANTHROPIC_VERSION = "2023-06-01"
CLAUDE_CONTEXT_TOKENS = 200_000
OPENING_USER_TURN = "(The conversation begins.)"


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    max_tokens: int
    messages: list[ChatMessage]
    system: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None


class _Block(msgspec.Struct):
    type: str
    text: str = ""


class _Usage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0


class _Message(msgspec.Struct):
    content: list[_Block]
    stop_reason: str | None = None
    usage: _Usage | None = None


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_Message).decode


def to_messages_api(messages: list[ChatMessage]) -> tuple[str | None, list[ChatMessage]]:
    """``(system, messages)`` in the shape the Messages API accepts."""
    system_parts: list[str] = []
    turns: list[ChatMessage] = []
    for message in messages:
        if message.role == "system":
            system_parts.append(message.content)
        elif turns and turns[-1].role == message.role:
            turns[-1] = ChatMessage(message.role, turns[-1].content + "\n\n" + message.content)
        else:
            turns.append(message)
    if not turns or turns[0].role != "user":
        turns.insert(0, ChatMessage("user", OPENING_USER_TURN))
    return ("\n\n".join(system_parts) or None), turns


class AnthropicClient(HTTPModelClient):
    """``anthropic/<model>`` over the Messages API."""

    provider = "anthropic"
    endpoint = ANTHROPIC
    path = "/v1/messages"

    def _headers(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers

    def _context(self, spec: str, given: int | None) -> int:
        return given or CLAUDE_CONTEXT_TOKENS

    def _body(self, request: ModelRequest) -> bytes:
        system, turns = to_messages_api(request.messages)
        if request.json_schema is not None:
            instruction = schema_instruction(request.json_schema)
            system = instruction if system is None else system + "\n\n" + instruction
        body = _Body(
            self.model,
            request.max_tokens,
            turns,
            system=system,
            temperature=min(max(request.temperature, 0.0), 1.0),
            stop_sequences=request.stop or None,
        )
        return _encode(body)

    async def _attempt(self, body: bytes) -> _Message:
        raw = await self._post(body)
        try:
            return _decode(raw)
        except msgspec.DecodeError:
            raise AttemptFailed("a reply that is not the API's JSON", kind="malformed") from None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        body = self._body(request)
        message, attempts = await self.retry.run(self.spec, lambda: self._attempt(body))
        text = "".join(block.text for block in message.content if block.type == "text")
        if message.usage is None:
            input_tokens = sum(self.count_tokens(m.content) for m in request.messages)
            output_tokens = self.count_tokens(text)
        else:
            input_tokens = message.usage.input_tokens
            output_tokens = message.usage.output_tokens
        parsed = None
        if request.json_schema is not None:
            parsed = parse_for_schema(text, request.json_schema, model=self.spec)
        return self._response(
            text, input_tokens, output_tokens, message.stop_reason, attempts, started, parsed
        )
