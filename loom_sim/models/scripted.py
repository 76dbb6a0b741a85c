"""Deterministic models for tests, demos and dry runs: ``scripted/<name or file>``.

A researcher debugging a persona config should not need an API key, and a test of the
rollout machine should not depend on what a model happens to say. Scripted models answer
instantly (no I/O per call: a script file is read once, when the client is made), cost 0,
and are reproducible:

* ``scripted/echo`` returns the last user message;
* ``scripted/varied`` returns natural-looking sentences drawn from a ``random.Random`` seeded
  with the request's ``seed`` and the turn (the number of assistant messages already in the
  request): the same seed and turn give the same text, a different seed or turn different
  text — enough variety for the repetition and stagnation monitors to have something to see;
* ``scripted/paraphrase`` reflects the last user message back in a few set phrasings;
* ``scripted/judge`` answers a request for JSON with a seeded instance of the asked schema:
  a stand-in judge for demos and tests (its scores mean nothing);
* ``scripted/probe-target`` and ``scripted/probe-judge``: the stand-in target of
  ``loom-sim probe`` and the contradiction judge that reads its reversals, registered by the
  probe (:mod:`loom_sim.probe.stand_ins`) like any package's scripts, through :data:`SCRIPTS`;
* ``scripted/<file>``: ``.yaml``/``.yml``/``.json`` holding ``responses: [...]`` or a bare
  list, or ``.txt`` with responses separated by blank lines. The response for a request is the
  one at index *number of assistant messages in the request* (cycling past the end), so a
  resumed conversation picks the script up where it left off. Non-string items (mappings,
  lists) are sent as JSON, handy for scripting a judge.

In code, ``ScriptedClient(responses=[...] or callable(request) -> str, latency_s=...,
fail_on_calls={2, 5}, raise_=...)`` also injects latency and failures. Failures are raised
as they are, without retries, so the caller's error handling is what gets tested.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
import yaml

from loom_sim.models.base import (
    CallLimiter,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Usage,
)
from loom_sim.models.json_repair import parse_for_schema
from loom_sim.plugins import Plugin, Registry

__all__ = ["SCRIPTS", "Script", "ScriptedClient", "load_script", "script", "varied_text"]

SCRIPT_SUFFIXES = (".yaml", ".yml", ".json", ".txt")

Responder = Callable[[ModelRequest], str]
FailureFactory = BaseException | type[BaseException] | Callable[[int], BaseException]


@dataclass(frozen=True, kw_only=True)
class Script(Plugin):
    """A named scripted model, ``scripted/<name>``: a pure function of the request."""

    respond: Responder


#: The built-in scripts, and any a package adds through the ``loom_sim.scripts`` entry points.
SCRIPTS: Registry[Script] = Registry("scripted model", "loom_sim.scripts")


def script(name: str, *, summary: str = "", order: int = 100) -> Callable[[Responder], Responder]:
    """Register the decorated ``respond(request) -> str`` as ``scripted/<name>``."""

    def register(respond: Responder) -> Responder:
        SCRIPTS.add(Script(name=name, respond=respond, summary=summary, order=order))
        return respond

    return register


# ─── scripts ────────────────────────────────────────────────────────────────


def load_script(path: Path, spec: str) -> list[str]:
    """The responses in a script file; ``ModelError`` naming the file when it is unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{spec}: cannot read the script {path} ({exc.strerror}).") from None
    if path.suffix == ".txt":
        items: Any = [part.strip() for part in re.split(r"\n[ \t]*\n", text) if part.strip()]
    else:
        try:
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ModelError(f"{spec}: the script {path} does not parse ({first}).") from None
        items = data.get("responses") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ModelError(
            f"{spec}: the script {path} holds no responses; "
            "give a list, a `responses:` list, or (.txt) paragraphs separated by blank lines."
        )
    return [item if isinstance(item, str) else json.dumps(item) for item in items]


# ─── the built-in generators ────────────────────────────────────────────────

# fmt: off
_OPENERS = (
    "Honestly,", "To be fair,", "You know,", "I guess", "Well,", "Thinking about it,",
    "Right now", "Lately", "If I'm being honest,", "Funny enough,", "Looking back,", "Still,",
)
_SUBJECTS = (
    "the project", "my sister", "the new job", "this whole week", "the meeting", "my plan",
    "the garden", "our budget", "the old apartment", "that conversation", "my routine",
    "the weather", "the neighbours", "my sleep", "the trip", "that idea",
)
_VERBS = (
    "keeps changing", "feels different", "went better than expected", "has been on my mind",
    "needs more time", "surprised me", "is harder than it looks", "makes me curious",
    "could work out", "seems stuck", "turned into something else", "started to make sense",
)
_TAILS = (
    "and I'm not sure why.", "but I want to try again.", "so I wrote it all down.",
    "which is new for me.", "more than I'd like to admit.", "and that's okay, I think.",
    "so I'm taking it slowly.", "though nobody else noticed.", "and I keep coming back to it.",
    "after everything that happened.", "if that makes sense.", "for the first time in ages.",
)
_QUESTIONS = (
    "What do you think?", "Does that sound strange?", "Have you seen that before?",
    "Where would you start?", "Is that normal?", "Should I wait?",
)
# fmt: on


def _turn(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "assistant")


def _last_user(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def varied_text(seed: int | None, turn: int) -> str:
    """Two to four sentences determined by ``(seed, turn)``; string seeding is stable across
    processes (it does not depend on ``PYTHONHASHSEED``)."""
    rng = random.Random(f"loom-varied:{0 if seed is None else seed}:{turn}")
    sentences = []
    for _ in range(rng.randint(2, 3)):
        sentences.append(
            f"{rng.choice(_OPENERS)} {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} "
            f"{rng.choice(_TAILS)}"
        )
    if rng.random() < 0.5:
        sentences.append(rng.choice(_QUESTIONS))
    return " ".join(s[0].upper() + s[1:] for s in sentences)


_PARAPHRASES = (
    "So what you're saying is: {text}",
    "If I follow you, {text}",
    "In other words, {text}",
    "Let me check I understand — {text}",
)


@script(
    "paraphrase", summary="reflects the last user message back in a few set phrasings", order=30
)
def paraphrase(request: ModelRequest) -> str:
    text = _last_user(request).strip()
    if not text:
        return "I'm listening."
    text = text[0].lower() + text[1:]
    return _PARAPHRASES[_turn(request) % len(_PARAPHRASES)].format(text=text)


@script("echo", summary="returns the last user message", order=10)
def echo(request: ModelRequest) -> str:
    return _last_user(request)


@script(
    "varied",
    summary="natural-looking sentences drawn by the request's seed and turn: the same seed "
    "and turn give the same text",
    order=20,
)
def varied(request: ModelRequest) -> str:
    return varied_text(request.seed, _turn(request))


def schema_instance(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value that satisfies ``schema`` (the subset judges use), drawn from ``rng``."""
    kind = schema.get("type")
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if kind == "object":
        props = schema.get("properties", {})
        return {key: schema_instance(sub, rng) for key, sub in props.items()}
    if kind == "array":
        low = schema.get("minItems", 1)
        high = schema.get("maxItems", max(low, 3))
        return [
            schema_instance(schema.get("items", {}), rng) for _ in range(rng.randint(low, high))
        ]
    if kind == "integer":
        return rng.randint(schema.get("minimum", 1), schema.get("maximum", 5))
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 3)
    if kind == "boolean":
        return rng.random() < 0.7
    return rng.choice(["plausible", "in character", "somewhat repetitive", "consistent so far"])


@script(
    "judge",
    summary="a stand-in judge: a seeded, schema-valid JSON answer (its scores mean nothing)",
    order=40,
)
def judge(request: ModelRequest) -> str:
    """A stand-in judge: a seeded, schema-valid answer (JSON) when a schema is asked for."""
    rng = random.Random(request.seed)
    if request.json_schema is None:
        return "I would rate this as reasonable."
    return json.dumps(schema_instance(request.json_schema, rng))


# ─── the client ─────────────────────────────────────────────────────────────


class ScriptedClient:
    """A :class:`~loom_sim.models.base.ModelClient` that needs no model.

    ``fail_on_calls`` holds 1-based call numbers (counted per client): those calls raise
    ``raise_`` — an exception instance, an exception class, or ``callable(call_number)`` —
    by default a :class:`ModelUnavailable`.
    """

    def __init__(
        self,
        spec: str = "scripted/custom",
        *,
        responses: Sequence[str] | Responder | None = None,
        latency_s: float = 0.0,
        fail_on_calls: Iterable[int] = (),
        raise_: FailureFactory | None = None,
        limiter: CallLimiter | None = None,
        context_tokens: int = 32_768,
    ) -> None:
        self.spec = spec
        self.context_tokens = context_tokens
        self.latency_s = latency_s
        self.fail_on_calls = frozenset(fail_on_calls)
        self._raise = raise_
        self._limiter = limiter
        self.calls = 0
        if responses is None:
            responses = self._from_spec(spec)
        if callable(responses):
            self._respond: Responder = responses
        else:
            script = list(responses)
            if not script:
                raise ModelError(f"{spec}: the script holds no responses.")
            self._respond = lambda request: script[_turn(request) % len(script)]

    @staticmethod
    def _from_spec(spec: str) -> Responder:
        name = spec.split("/", 1)[1] if "/" in spec else spec
        if name in SCRIPTS:
            return SCRIPTS.get(name).respond
        path = Path(name).expanduser()
        if path.suffix.lower() not in SCRIPT_SUFFIXES:
            raise ModelError(
                f"{spec}: unknown script; use one of {', '.join(SCRIPTS.names())} or a "
                ".yaml/.yml/.json/.txt file."
            )
        if not path.is_file():
            raise ModelError(f"{spec}: the script file {path} does not exist.")
        script = load_script(path, spec)
        return lambda request: script[_turn(request) % len(script)]

    def __repr__(self) -> str:
        return f"ScriptedClient({self.spec!r})"

    def count_tokens(self, text: str) -> int:
        """Words, roughly: scripted runs only need plausible, deterministic counts."""
        return len(text.split())

    async def aclose(self) -> None:
        return None

    def _failure(self, call: int) -> BaseException:
        factory = self._raise
        if factory is None:
            return ModelUnavailable(f"{self.spec}: injected failure on call {call}.")
        if isinstance(factory, BaseException):
            return factory
        if isinstance(factory, type):
            return factory(f"{self.spec}: injected failure on call {call}.")
        return factory(call)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self._limiter is None:
            return await self._complete(request)
        async with self._limiter:
            return await self._complete(request)

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        call = self.calls
        if self.latency_s > 0:
            await trio.sleep(self.latency_s)
        else:
            await trio.lowlevel.checkpoint()  # a real call yields; so does a fake one
        if call in self.fail_on_calls:
            raise self._failure(call)
        text = self._respond(request)
        finish_reason = "stop"
        if request.max_tokens > 0:
            words = text.split()
            if len(words) > request.max_tokens:  # like a real model cut off at max_tokens
                text = " ".join(words[: request.max_tokens])
                finish_reason = "length"
        parsed = None
        if request.json_schema is not None:
            parsed = parse_for_schema(text, request.json_schema, model=self.spec)
        usage = Usage(
            input_tokens=sum(self.count_tokens(m.content) for m in request.messages),
            output_tokens=self.count_tokens(text),
            cost_usd=0.0,
        )
        return ModelResponse(
            text=text, usage=usage, model=self.spec, finish_reason=finish_reason, parsed=parsed
        )
