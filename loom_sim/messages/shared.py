"""The messages every system's actors share: what a model-backed actor said (``Utterance``)
and the committed exchanges it hears (``Heard``), the judge's requests and judgements, and the
embedding service's.

Each system keeps its own messages in its folder (:mod:`loom_sim.rollout.messages`,
:mod:`loom_sim.harness.messages`, :mod:`loom_sim.debate.messages`); the kinds every message
shares and the open registry of message types are :mod:`loom_sim.core.messages`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.core.messages import Body, Request, Tell
from loom_sim.models.base import Usage

# ─── what an actor said, and what it hears ──────────────────────────────────


class Utterance(Body, frozen=True):
    """What a model-backed actor said, with what it cost."""

    text: str
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1
    cut_turns: int = 0  # history turns left out to fit the context budget
    # why the model stopped ("stop", or "length"/"max_tokens": cut at the token limit)
    finish_reason: str | None = None

    def summary(self) -> str:
        text = self.text
        return text


class Heard(Tell, frozen=True):
    """To the persona and to the responders that listen (adversaries): this exchange is now
    part of the conversation."""

    turn: int
    persona: str
    interlocutor: str

    def summary(self) -> str:
        text = f"turn {self.turn + 1} exchange committed"
        return text


# ─── judge ──────────────────────────────────────────────────────────────────


class WindowTurn(msgspec.Struct, frozen=True):
    turn: int
    persona: str
    interlocutor: str


class Judgement(Body, frozen=True):
    ok: bool
    parsed: Any = None
    raw: str = ""
    error: str | None = None
    attempts: int = 1
    usage: Usage = msgspec.field(default_factory=Usage)
    fitted: str | None = None  # what of the window was left out to fit the judge's context

    def summary(self) -> str:
        text = f"ok {self.parsed}" if self.ok else f"failed: {self.error}"
        return text


class Judge(Request[Judgement], frozen=True):
    """Judge: score a window of turns against a rubric; answer as JSON matching ``schema``.

    ``rubric`` (the question, after the transcript) and ``brief`` (what is judged and by which
    criteria, before it) are trusted text (loom-sim's templates and the config); everything a
    model wrote travels in ``window`` and ``material`` (an adversary probe's quotes and claims),
    which reach the judge only fenced (:mod:`loom_sim.judging.fence`). The brief is the same for
    every turn of a rollout, so it belongs to the prompt's shared prefix.
    """

    turn: int
    rubric: str
    window: list[WindowTurn]
    schema: dict[str, Any]
    rubric_id: str = ""
    material: dict[str, str] = msgspec.field(default_factory=dict)
    brief: str = ""

    def summary(self) -> str:
        text = f"rubric {self.rubric_id or '?'} over turns {[w.turn + 1 for w in self.window]}"
        return text


# ─── embedding service ──────────────────────────────────────────────────────


class Embeddings(Body, frozen=True):
    """The vectors of the texts asked for, one row each, in order (a read-only float32 array
    of shape (n, 384)); or, when the embedding model could not be loaded, none, and the
    backend the monitor should use instead."""

    backend: str  # "embedding", or "tfidf" (the fallback: vectors is None then)
    vectors: Any = None


class Embed(Request[Embeddings], frozen=True):
    """Embedding service: the vectors of ``texts`` (a verdict waits on them)."""

    texts: list[str]


class Prefetch(Tell, frozen=True):
    """Embedding service: ``texts`` will be needed; embed them when the model is free."""

    texts: list[str]
