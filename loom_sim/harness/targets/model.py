"""``model:``: any loom-sim model spec as the target (``model:openai/gpt-4.1``,
``model:local/smollm2``), through the run's model hub — retries, limits, usage and prices as
for every other model call.

A model keeps no state between calls, so the adapter keeps the conversation: the exchanges so
far (rebuilt from the session's records when it resumes) go with every request.

``reply_timeout_s`` is the deadline for the whole reply, retries included: the hub's client
has its own per-attempt deadline (``--timeout``), but the target's setting is what the pack
promises, so a reply that has not come by then is a failed action, however the time went.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import trio
from pydantic import Field

from loom_sim.harness.targets.base import AdapterContext, Exchange, TargetFatal
from loom_sim.models.base import (
    BadModelReply,
    ChatMessage,
    ModelClient,
    ModelError,
    ModelRequest,
    ModelResponse,
)
from loom_sim.plugins.adapters import TargetSettings, adapter
from loom_sim.seeds import derive_seed


class ChatSettings(TargetSettings):
    """What a conversation with a stateless chat endpoint needs."""

    on_silence: Literal["ok", "failed"] = Field(
        "failed",
        description="What an empty answer means: a chat endpoint that answers nothing has "
        "failed (`failed`, its default), unless its pack says `ok`.",
    )
    system: str = Field("", description="The target's system prompt.")
    max_tokens: int = Field(300, ge=1, le=32_768, description="Longest reply.")
    temperature: float = Field(0.7, ge=0, le=2)
    history_turns: int = Field(20, ge=0, le=1000, description="Past exchanges sent with each.")


class ModelSettings(ChatSettings):
    """A model, by loom-sim spec."""

    templated: ClassVar[tuple[str, ...]] = ("setup", "events", "artifacts")

    adapter: Literal["model"] = "model"
    spec: str = Field(min_length=3, description="A model spec, e.g. openai/gpt-4.1.")


def shorthand(address: str) -> dict[str, Any]:
    return {"spec": address}


class Conversation:
    """The messages of a chat target, and one call with them."""

    def __init__(self, settings: ChatSettings, context: AdapterContext):
        self.settings = settings
        self.seed = context.seed
        self.history: list[tuple[str, str]] = list(context.history)
        self.pending: str | None = None  # sent, not yet answered

    def take(self) -> str:
        if self.pending is None:
            raise TargetFatal("a reply was awaited before anything was sent")
        text, self.pending = self.pending, None
        return text

    def request(self, text: str) -> ModelRequest:
        settings = self.settings
        messages = [ChatMessage("system", settings.system)] if settings.system else []
        kept = self.history[-settings.history_turns :] if settings.history_turns else []
        for sent, replied in kept:
            messages += [ChatMessage("user", sent), ChatMessage("assistant", replied)]
        messages.append(ChatMessage("user", text))
        return ModelRequest(
            messages=messages,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            seed=derive_seed(self.seed, "target", len(self.history)),
        )

    async def exchange(self, client: ModelClient, text: str, what: str) -> Exchange:
        """One call; a server that cannot be used is fatal, a bad reply a failed action."""
        started = trio.current_time()
        try:
            response: ModelResponse = await client.complete(self.request(text))
        except BadModelReply as exc:
            return Exchange("", "complete", _since(started), error=str(exc))
        except ModelError as exc:
            raise TargetFatal(f"the target {what} failed: {exc}") from None
        self.history.append((text, response.text))
        return Exchange(
            text=response.text,
            ended_by="complete",
            duration_s=_since(started),
            usage=response.usage,
            notes=[
                {
                    "type": "completion",
                    "finish_reason": response.finish_reason,
                    "attempts": response.attempts,
                }
            ],
        )


def _since(started: float) -> float:
    return round(trio.current_time() - started, 3)


class ModelAdapter:
    def __init__(self, settings: ModelSettings, context: AdapterContext):
        self.settings = settings
        self.conversation = Conversation(settings, context)
        self._client = context.model(settings.spec)

    def describe(self) -> dict[str, Any]:
        return {"adapter": "model", "spec": self.settings.spec}

    async def start(self, nursery: trio.Nursery) -> Exchange:
        return Exchange("", "complete")

    async def send(self, text: str) -> None:
        self.conversation.pending = text

    async def receive(self) -> Exchange:
        text = self.conversation.take()
        limit = self.settings.reply_timeout_s
        with trio.move_on_after(limit):
            return await self.conversation.exchange(
                self._client, text, f"model {self.settings.spec}"
            )
        why = f"the model {self.settings.spec} gave no reply within {limit:g} s (reply_timeout_s)"
        return Exchange("", "timeout", limit, error=why)

    async def close(self) -> None:
        return None  # the hub owns the client


@adapter(
    "model",
    settings=ModelSettings,
    shorthand=shorthand,
    summary="any loom-sim model spec, called through the model hub",
    order=30,
)
def open_model(settings: ModelSettings, context: AdapterContext) -> ModelAdapter:
    return ModelAdapter(settings, context)
