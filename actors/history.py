"""Fitting a conversation into a model's context window.

Long rollouts outgrow small models' context. The system prompt and the newest turns matter
most, so whole exchanges are dropped from the front until the rest fits, and the number cut is
reported (the transcript records it). Token counts are taken once per message when it joins
the history, so a 200-turn rollout never recounts its past.

A cut can move in steps. Cutting just enough every turn moves the start of the history by one
exchange each turn, so the prompt never shares a prefix with the last one and a model with a
prompt cache (llama.cpp's, the providers') rereads all of it every turn. With a step, the cut
point only moves when the excess crosses the next multiple of the step, and then by enough to
leave room for several turns: between those moves the prompt only grows at its end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from loom_sim.models.base import ChatMessage, ModelClient, Preloadable


@dataclass(frozen=True)
class Generation:
    """How a role's model is asked to generate."""

    max_tokens: int
    temperature: float
    budget_tokens: int | None = None  # history budget; None: context window minus the reply
    grammar: str | None = None  # a shape to sample under (models that can; others ignore it)


# Per-message overhead of chat formats (role markers, separators), in tokens.
MESSAGE_OVERHEAD = 4


@dataclass
class History:
    """One actor's view of the conversation: alternating user/assistant messages, counted."""

    messages: list[ChatMessage] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    #: Some counts are estimates: the model's tokenizer was not loaded when they were taken
    #: (an in-process model still loading while a resumed or re-scored rollout is rebuilt).
    estimated: bool = False

    def append(self, message: ChatMessage, tokens: int, *, exact: bool = True) -> None:
        self.messages.append(message)
        self.tokens.append(tokens + MESSAGE_OVERHEAD)
        self.estimated = self.estimated or not exact

    async def settle(self, model: ModelClient) -> bool:
        """Make estimated counts exact before they decide a cut: an estimate can be short by
        a tenth, and a prompt cut by it overflows the context. Loads the model (in a worker
        thread) if it has to. Whether anything was recounted."""
        if not self.estimated:
            return False
        if isinstance(model, Preloadable):
            await model.preload()
        self.recount(model.count_tokens)
        return True

    def recount(self, count: Callable[[str], int]) -> None:
        self.tokens = [count(m.content) + MESSAGE_OVERHEAD for m in self.messages]
        self.estimated = False

    def fit(
        self,
        system: ChatMessage,
        system_tokens: int,
        tail: list[ChatMessage],
        tail_tokens: int,
        budget: int,
        *,
        step_tokens: int | None = None,
    ) -> tuple[list[ChatMessage], int]:
        """System + as many recent messages as fit + tail; returns (messages, exchanges cut).

        Messages are dropped in (user, assistant) pairs from the front, so the result still
        starts with a user message and alternates, as every chat API requires. With
        ``step_tokens``, the tokens cut are at least the excess rounded up to a multiple of
        the step, so what is left holds between ``budget - step_tokens`` and ``budget`` tokens,
        and the cut point stays where it was until the history has grown by about a step. The
        cut depends on the history alone, so a resumed rollout cuts where the first run did.
        """
        start = self.start(system_tokens + tail_tokens, budget, step_tokens=step_tokens)
        return [system, *self.messages[start:], *tail], start // 2

    def start(
        self,
        fixed_tokens: int,
        budget: int,
        *,
        step_tokens: int | None = None,
        added: Mapping[int, int] | None = None,
    ) -> int:
        """The index of the first message kept (even: whole exchanges are cut) when
        ``fixed_tokens`` (system prompt and tail) go with the history; ``added``: tokens a
        message carries beyond its own, by index (the persona's instruction updates)."""
        added = added or {}
        tokens = [t + added.get(i, 0) for i, t in enumerate(self.tokens)]
        excess = fixed_tokens + MESSAGE_OVERHEAD + sum(tokens) - budget
        if excess > 0 and step_tokens:
            excess = -(-excess // step_tokens) * step_tokens
        start = 0
        while excess > 0 and start + 2 <= len(self.messages):
            excess -= tokens[start] + tokens[start + 1]
            start += 2
        return start
