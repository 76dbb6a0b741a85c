"""Asking a model for JSON that must validate: one loop for every structured call.

The judge, and the debate's detector, exit check and card writer, all ask a model for a JSON
object, read it tolerantly (:func:`~loom_sim.models.json_repair.read_json`), validate it, and
ask again a bounded number of times when it is unusable; then they report the failure instead
of inventing an answer. This module is that loop, written once.

Two habits beyond "try again":

* **Feedback.** With ``feedback=True`` a retry shows the model its unusable answer and the
  reason it was refused ("claim 2 cites m7, which is not Ada's message"), the way a debate
  message that fails its checks is regenerated with the reason.
* **Garbled replies are answers too.** A reply the provider could not even deliver in usable
  form (``BadModelReply``) uses up an attempt like an unusable answer; a model that cannot be
  reached at all (``ModelUnavailable``, ``RetriesExhausted``) is raised to the caller.
* **Room to finish.** A reply cut off at its token limit and closed by truncation repair is
  accepted only if it still validates; if not, the next attempt gets twice the tokens (up to
  ``max_tokens_cap``), since asking a model to fit the same answer in the same room again
  mostly cuts it at the same place.
* **No echo.** A model that answers the same request the same way (llama.cpp at temperature 0)
  is not asked the same thing twice: with no feedback and no more room to give, the first
  unusable answer is the last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from loom_sim.models.base import (
    BadModelReply,
    ChatMessage,
    ModelClient,
    ModelRequest,
    Usage,
    greedy_is_deterministic,
)
from loom_sim.models.json_repair import read_json

T = TypeVar("T")

#: Checks a parsed value and returns what the caller keeps; raises ``ValueError`` (or
#: ``BadModelReply``) with a sentence the model can act on.
Validator = Callable[[Any], T]


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A structured call's outcome: the validated value, or why there is none."""

    ok: bool
    value: T | None
    raw: str  # the last reply's text
    error: str | None
    attempts: int
    usage: Usage
    reading: str | None = None  # how the JSON was read (whole, fence, balanced, truncation)
    problems: list[str] = field(default_factory=list)  # one per refused attempt


async def ask_json(
    model: ModelClient,
    messages: list[ChatMessage],
    *,
    schema: dict[str, Any],
    validate: Validator[T],
    seed: Callable[[int], int],
    max_attempts: int = 3,
    max_tokens: int = 400,
    max_tokens_cap: int = 2048,
    temperature: float = 0.0,
    feedback: bool = False,
    complete_part: Callable[[Any], Any] | None = None,
) -> Answer[T]:
    """Ask ``model`` for JSON matching ``schema`` until ``validate`` accepts it; ``seed(n)`` is
    the sampling seed of attempt ``n``.

    ``complete_part`` is for answers that are lists of findings: given a value read by
    truncation repair that does not validate, it returns the value without its cut-off last
    item (the one the token limit ended inside), which is then validated instead — the
    complete findings are kept, the half-written one is not guessed at."""

    def read(text: str) -> tuple[Any, str]:
        reading = read_json(text, model=model.spec, prefer_object=True)
        return reading.value, reading.how

    return await _ask(
        model, messages, schema, read, validate, seed, max_attempts, max_tokens,
        max_tokens_cap, temperature, feedback, complete_part,
    )  # fmt: skip


async def ask_text(
    model: ModelClient,
    messages: list[ChatMessage],
    *,
    validate: Validator[T],
    seed: Callable[[int], int],
    max_attempts: int = 3,
    max_tokens: int = 400,
    max_tokens_cap: int = 4096,
    temperature: float = 0.7,
    feedback: bool = True,
    grammar: str | None = None,
) -> Answer[T]:
    """The same loop for prose: ``validate`` reads the reply's text (stripped). ``grammar``
    (GBNF) constrains a model that can sample under one (the embedded model); the others
    ignore it, so ``validate`` still checks everything the grammar says."""
    return await _ask(
        model, messages, None, lambda text: (text.strip(), "text"), validate, seed,
        max_attempts, max_tokens, max_tokens_cap, temperature, feedback, None, grammar,
    )  # fmt: skip


async def _ask(
    model: ModelClient,
    messages: list[ChatMessage],
    schema: dict[str, Any] | None,
    read: Callable[[str], tuple[Any, str]],
    validate: Validator[T],
    seed: Callable[[int], int],
    max_attempts: int,
    max_tokens: int,
    max_tokens_cap: int,
    temperature: float,
    feedback: bool,
    complete_part: Callable[[Any], Any] | None,
    grammar: str | None = None,
) -> Answer[T]:
    usage = Usage()
    raw = ""
    problems: list[str] = []
    conversation = list(messages)
    tokens = max_tokens
    made = 0
    for attempt in range(max_attempts):
        made += 1
        try:
            response = await model.complete(
                ModelRequest(
                    messages=conversation,
                    max_tokens=tokens,
                    temperature=temperature,
                    seed=seed(attempt),
                    json_schema=schema,
                    grammar=grammar,
                )
            )
        except BadModelReply as err:  # a garbled body: as unusable as a garbled answer
            problems.append(str(err))
            continue
        usage = usage + response.usage
        raw = response.text
        cut_off = response.finish_reason == "length"
        try:
            parsed, how = read(raw)
            try:
                value = validate(parsed)
            except (BadModelReply, ValueError):
                if complete_part is None or how != "truncation":
                    raise
                value = validate(complete_part(parsed))
        except (BadModelReply, ValueError) as err:
            problem = str(err)
            problems.append(problem)
            # More room helps only a reply cut at the budget asked for, not at a cap of the
            # client's own (the embedded model's), which would cut it at the same place again.
            # (A reply that reports no token count is taken to have used the budget.)
            roomier = cut_off and not 0 < response.usage.output_tokens < tokens
            if roomier:
                tokens = min(tokens * 2, max(max_tokens_cap, tokens))
            if feedback:
                conversation = [
                    *messages,
                    ChatMessage("assistant", raw),
                    ChatMessage("user", _retry_note(problem, cut_off, schema is not None)),
                ]
            elif temperature == 0 and not roomier and greedy_is_deterministic(model):
                break  # the same request again would get the same answer, word for word
            continue
        return Answer(True, value, raw, None, attempt + 1, usage, how, problems)
    error = problems[-1] if problems else "no attempt made"
    return Answer(False, None, raw, error, made, usage, None, problems)


def _retry_note(problem: str, cut_off: bool, json: bool) -> str:
    why = "It was cut off before it ended. " if cut_off else ""
    again = "one complete JSON object only" if json else "the text only"
    return f"That answer cannot be used: {problem}. {why}Answer again with {again}."


def require_keys(schema: dict[str, Any]) -> Validator[dict[str, Any]]:
    """The judge's check: an object holding the schema's required keys."""

    def check(parsed: Any) -> dict[str, Any]:
        if not isinstance(parsed, dict):
            raise BadModelReply(f"the answer is {type(parsed).__name__}, not a JSON object")
        missing = [key for key in schema.get("required", ()) if key not in parsed]
        if missing:
            raise BadModelReply(f"the answer lacks {', '.join(missing)}")
        return parsed

    return check
