"""Fake models and actors for runtime tests: deterministic, instant, inspectable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from loom_sim.models.base import BadModelReply, ModelRequest, ModelResponse, RetriesExhausted, Usage


@dataclass
class FakeModel:
    """A ModelClient whose reply is ``reply(request)``; can fail on chosen calls."""

    reply: Callable[[ModelRequest], str]
    spec: str = "scripted/fake"
    context_tokens: int = 100_000
    fail_on: dict[int, str] = field(default_factory=dict)  # call number -> "empty" | "exhausted"
    calls: list[ModelRequest] = field(default_factory=list)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(request)
        failure = self.fail_on.get(len(self.calls))
        if failure == "exhausted":
            raise RetriesExhausted(f"{self.spec}: 5 attempts failed (last: HTTP 503)")
        text = "" if failure == "empty" else self.reply(request)
        if failure == "garbled":
            raise BadModelReply(f"{self.spec} returned a malformed body")
        return ModelResponse(text=text, usage=Usage(10, len(text.split()), 0.0), model=self.spec)

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    async def aclose(self) -> None:
        pass


def turn_of(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "assistant")


def varied_persona(request: ModelRequest) -> str:
    topics = ["the commits", "my sleep", "the pattern", "my manager", "the logs", "the timing"]
    n = turn_of(request)
    return f"Persona line {n} about {topics[(request.seed or 0) % len(topics)]}."


def echo_interlocutor(request: ModelRequest) -> str:
    return "I hear: " + request.messages[-1].content[:40]
