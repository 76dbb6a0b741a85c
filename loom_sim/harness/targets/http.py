"""``http:``: a chat program behind HTTP.

Two shapes of endpoint:

* ``api: openai`` (the default): any OpenAI-compatible chat completions server (llama.cpp's,
  vLLM, a product's own), called with loom-sim's OpenAI client — its retries, backoff and
  error messages — at the target's URL, e.g. ``http:http://127.0.0.1:8080/v1``;
* ``api: json``: any JSON POST. ``request`` is the body, where the string ``"{message}"``
  becomes the user's line and ``"{messages}"`` the conversation as a list of
  ``{"role", "content"}``; ``reply_field`` says where the answer is, JSONPath-style
  (``$.data.reply``, ``$.choices[0].message.content``).

A key, if the endpoint needs one, is read from the environment variable ``api_key_env`` names
and sent as a bearer token; it is never written anywhere. A refused connection, or an endpoint
that keeps failing after its retries, is fatal; a reply without the field is a failed action.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, ClassVar, Literal

import httpx
import trio
from pydantic import Field, field_validator

from loom_sim.errors import LoomError
from loom_sim.harness.targets.base import AdapterContext, Exchange, TargetFatal
from loom_sim.harness.targets.model import ChatSettings, Conversation, _since
from loom_sim.models._http import HTTPPool, check_base_url
from loom_sim.models.base import BadModelReply, ModelError
from loom_sim.models.openai import OpenAIClient
from loom_sim.models.reply_limits import MAX_REPLY_BYTES
from loom_sim.models.retry import AttemptFailed, RetryPolicy, status_error, transport_failure
from loom_sim.plugins.adapters import adapter

_PATH_PART = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


class HttpSettings(ChatSettings):
    """A chat endpoint over HTTP."""

    templated: ClassVar[tuple[str, ...]] = ("setup", "events", "artifacts", "url")

    adapter: Literal["http"] = "http"
    url: str = Field(description="openai: the base URL (…/v1); json: the URL to POST to.")
    api: Literal["openai", "json"] = "openai"
    model: str = Field("default", description="openai: the model name sent.")
    request: Any = Field(
        default_factory=lambda: {"message": "{message}"},
        description='json: the body; "{message}" and "{messages}" are filled in.',
    )
    reply_field: str = Field("$.reply", description="json: where the reply is, e.g. $.data.reply")
    headers: dict[str, str] = Field(default_factory=dict, description="Extra headers.")
    api_key_env: str | None = Field(
        None, description="The environment variable holding a bearer token, if one is needed."
    )
    max_attempts: int = Field(3, ge=1, le=20, description="Tries per message (with backoff).")
    max_reply_bytes: int = Field(
        MAX_REPLY_BYTES,
        ge=1024,
        le=1 << 30,
        description="Largest reply body read; past it the action failed and reading stops.",
    )

    @field_validator("reply_field")
    @classmethod
    def _path(cls, value: str) -> str:
        parse_path(value)
        return value


def parse_path(path: str) -> list[str | int]:
    """``$.choices[0].message.content`` -> ``["choices", 0, "message", "content"]``."""
    body = path.strip()
    body = body[1:] if body.startswith("$") else body
    parts: list[str | int] = []
    pos = 0
    while pos < len(body):
        match = _PATH_PART.match(body, pos)
        if match is None:
            raise ValueError(f"cannot read {path!r} as a path like $.data.reply or $.items[0].text")
        parts.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        pos = match.end()
    if not parts:
        raise ValueError(f"{path!r} names no field")
    return parts


def pluck(data: Any, parts: list[str | int]) -> Any:
    for part in parts:
        if isinstance(part, int) and isinstance(data, list) and -len(data) <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict) and part in data:
            data = data[part]
        else:
            raise KeyError(part)
    return data


def fill(template: Any, message: str, messages: list[dict[str, str]]) -> Any:
    if template == "{message}":
        return message
    if template == "{messages}":
        return messages
    if isinstance(template, str):
        return template.replace("{message}", message)
    if isinstance(template, list):
        return [fill(item, message, messages) for item in template]
    if isinstance(template, dict):
        return {key: fill(value, message, messages) for key, value in template.items()}
    return template


def shorthand(address: str) -> dict[str, Any]:
    return {"url": address}


class HttpAdapter:
    def __init__(self, settings: HttpSettings, context: AdapterContext):
        self.settings = settings
        self.url = context.fill(settings.url)
        self.conversation = Conversation(settings, context)
        key = None
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env)
            if not key:
                needs = f"the http target {self.url} needs a key: set {settings.api_key_env}"
                raise LoomError(needs)
        self._key = key
        self._retry = RetryPolicy(max_attempts=settings.max_attempts)
        self._label = f"http target {self.url}"
        self._client: OpenAIClient | None = None
        self._pool: HTTPPool | None = None

    def describe(self) -> dict[str, Any]:
        return {"adapter": "http", "api": self.settings.api, "url": self.url}

    async def start(self, nursery: trio.Nursery) -> Exchange:
        settings = self.settings
        try:
            if settings.api == "openai":
                base = re.sub(r"/chat/completions/?$", "", self.url)
                self._client = OpenAIClient(
                    f"openai/{settings.model}",
                    base_url=base,
                    api_key=self._key or "",
                    retry=self._retry,
                    timeout_s=settings.reply_timeout_s,
                    context_tokens=1 << 20,
                    max_reply_bytes=settings.max_reply_bytes,
                )
            else:
                self._pool = HTTPPool(check_base_url(self._label, self.url), max_connections=2)
        except ModelError as exc:
            raise TargetFatal(str(exc)) from None
        return Exchange("", "complete")

    async def send(self, text: str) -> None:
        self.conversation.pending = text

    async def receive(self) -> Exchange:
        text = self.conversation.take()
        if self._client is not None:
            return await self.conversation.exchange(self._client, text, self._label)
        return await self._post_json(text)

    async def _post_json(self, text: str) -> Exchange:
        assert self._pool is not None
        settings, started = self.settings, trio.current_time()
        request = self.conversation.request(text)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        body = json.dumps(fill(settings.request, text, messages)).encode()
        headers = {"Content-Type": "application/json", **settings.headers}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        target = self._pool.target(
            self.url, headers, settings.reply_timeout_s, settings.max_reply_bytes
        )
        secrets = (self._key,) if self._key else ()

        async def attempt() -> bytes:
            try:
                reply = await self._pool.post(target, body)  # type: ignore[union-attr]
            except httpx.TransportError as exc:
                failure = transport_failure(
                    exc, spec=self._label, base_url=self.url, timeout_s=settings.reply_timeout_s
                )
                raise failure from exc
            if 200 <= reply.status < 300:
                return reply.content
            raise status_error(
                reply.status,
                reply.headers,
                reply.content,
                spec=self._label,
                model="",
                base_url=self.url,
                key_env=settings.api_key_env or "",
                has_key=bool(self._key),
                secrets=secrets,
            )

        try:
            content, attempts = await self._retry.run(self._label, attempt)
        except AttemptFailed as exc:  # pragma: no cover - run() turns these into ModelError
            raise TargetFatal(f"the {self._label} failed: {exc}") from None
        except BadModelReply as exc:  # a reply past the size cap: this action failed
            return Exchange("", "complete", _since(started), error=str(exc))
        except ModelError as exc:
            raise TargetFatal(f"the {self._label} failed: {exc}") from None
        try:
            answer = pluck(json.loads(content), parse_path(settings.reply_field))
        except (ValueError, KeyError) as exc:
            excerpt = content[:120].decode("utf-8", "replace")
            why = f"no {settings.reply_field} in the reply ({type(exc).__name__}: {exc}): {excerpt}"
            return Exchange("", "complete", _since(started), error=why)
        answer = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        self.conversation.history.append((text, answer))
        notes = [{"type": "http", "attempts": attempts}]
        return Exchange(answer, "complete", _since(started), notes=notes)

    async def close(self) -> None:
        with trio.CancelScope(shield=True):
            if self._client is not None:
                await self._client.aclose()
            if self._pool is not None:
                await self._pool.aclose()


@adapter(
    "http",
    settings=HttpSettings,
    shorthand=shorthand,
    summary="an OpenAI-compatible chat endpoint, or any JSON POST with a request template "
    "and a reply field",
    order=20,
)
def open_http(settings: HttpSettings, context: AdapterContext) -> HttpAdapter:
    return HttpAdapter(settings, context)
