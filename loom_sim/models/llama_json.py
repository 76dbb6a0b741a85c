"""JSON answers from llama.cpp written by the schema and filled in by the model.

Held to a schema by one grammar, llama.cpp still decodes the answer a token at a time, and
most of a judge's answer is not the model's to choose: ``{"persona_adherence": `` is fixed by
the schema, and so are the keys of the nine scores after it. On a CPU every decoded token
costs a full pass over the weights (~17 ms for the embedded model), while a run of known
tokens is read in one batch at prompt speed (~3.5 ms a token). So for a schema this module
understands, the answer's structure is *written*: keys, braces, quotes, commas, read by the
model in batches. The model writes only what is its to choose: each value, under a small
grammar of that value's own (``1``-``5`` for a Likert score, ``true``/``false``, a quoted
sentence). A judge's answer costs the model a dozen decoded tokens and a sentence instead of
a hundred and fifty.

It also keeps what the schema says: a Likert score is 1 to 5, an intensity 0 to 1. And
every free-text value gets its own room (``text_tokens``; a list's items share one), so a
rambling list cannot cut off the keys after it: the answer is always complete JSON, with a
value for every property.

Understood: objects with fixed properties (all written, in order), arrays (``minItems``,
``maxItems``), strings (``maxLength`` bounds their tokens), booleans, integers and numbers
(``minimum``, ``maximum``), ``enum`` of scalars. Anything else (``anyOf``, ``$ref``,
``pattern``, free-form objects) makes :func:`plan_answer` return ``None``, and the caller
holds the model to the whole schema by one grammar, as llama-cpp-python does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Plan", "Written", "most_sampled", "most_written", "plan_answer", "write_answer"]

# ─── the schema, as something to write ──────────────────────────────────────


@dataclass(frozen=True)
class Choice:
    """One of a few JSON literals (booleans, an enum, a small integer range)."""

    literals: tuple[str, ...]


#: The most tokens a number of no narrower grammar is written in.
_NUMBER_TOKENS = 24


@dataclass(frozen=True)
class Number:
    """A number written digit by digit, under ``grammar`` (a GBNF expression), in at most
    ``most`` tokens (its closer included)."""

    grammar: str
    most: int = _NUMBER_TOKENS


@dataclass(frozen=True)
class Text:
    """A free-text string; ``max_chars`` from ``maxLength``."""

    max_chars: int | None = None


@dataclass(frozen=True)
class Items:
    item: Plan
    min_items: int = 0
    max_items: int | None = None


@dataclass(frozen=True)
class Fields:
    fields: tuple[tuple[str, Plan], ...]


Plan = Choice | Number | Text | Items | Fields

_HARMLESS = {"type", "description", "title", "default", "examples"}
_KNOWN = _HARMLESS | {
    "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "enum", "minimum", "maximum", "maxLength",
}  # fmt: skip
#: Above this many values, an integer range is written digit by digit rather than chosen.
_MAX_CHOICES = 32

_INTEGER = '"-"? [0-9] [0-9]{0,14}'
_NATURAL = "[0-9] [0-9]{0,14}"
_DECIMAL = '"-"? [0-9] [0-9]{0,14} ("." [0-9]{1,6})?'
_UNSIGNED = '[0-9] [0-9]{0,14} ("." [0-9]{1,6})?'
_UNIT = '("0" ("." [0-9]{1,3})?) | ("1" ("." "0"{1,3})?)'


def plan_answer(schema: Any) -> Plan | None:
    """How to write an answer of ``schema``; None when it uses what this module does not
    understand (the caller then holds the model to the whole schema by one grammar)."""
    if not isinstance(schema, dict) or set(schema) - _KNOWN:
        return None
    kind = schema.get("type")
    if "enum" in schema:
        values = schema["enum"]
        if not values or not all(isinstance(v, str | int | float | bool) for v in values):
            return None
        return Choice(tuple(json.dumps(v, ensure_ascii=False) for v in values))
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") or {}
        if not properties or schema.get("additionalProperties", False) is not False:
            return None
        fields = []
        for name, sub in properties.items():
            planned = plan_answer(sub)
            if planned is None:
                return None
            fields.append((name, planned))
        return Fields(tuple(fields))
    if kind == "array":
        item = plan_answer(schema.get("items"))
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        if item is None or not isinstance(low, int) or not isinstance(high, int | None):
            return None
        return Items(item, low, high)
    if kind == "string":
        return Text(schema.get("maxLength"))
    if kind == "boolean":
        return Choice(("true", "false"))
    low, high = schema.get("minimum"), schema.get("maximum")
    if kind == "integer":
        if isinstance(low, int) and isinstance(high, int) and 0 <= high - low < _MAX_CHOICES:
            return Choice(tuple(str(i) for i in range(low, high + 1)))
        return Number(_NATURAL if isinstance(low, int | float) and low >= 0 else _INTEGER)
    if kind == "number":
        nonnegative = isinstance(low, int | float) and low >= 0
        if nonnegative and isinstance(high, int | float) and high <= 1:
            return Number(_UNIT, most=6)  # "0.125" or "1.000", and a closer
        return Number(_UNSIGNED if nonnegative else _DECIMAL)
    return None


# ─── writing it ─────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Written:
    """The answer, and what writing it took."""

    text: str
    prompt_tokens: int
    answer_tokens: int  # written and sampled alike
    cut: bool  # a text value ran out of room (it was closed where it stopped)


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return json.dumps(text, ensure_ascii=True)  # JSON escapes are GBNF's too


def _any_of(options: list[str] | tuple[str, ...]) -> str:
    return "(" + " | ".join(_literal(o) for o in options) + ")"


class _Writer:
    """One answer being written: the tokens the model has read or will read (the prompt,
    then the answer so far), and a grammar-held sampler for the parts that are its to write.

    The tokens are kept as written and as sampled, never re-tokenized from text, so each
    call to llama.cpp matches the whole of what it evaluated before and reads only what is
    new: the last sampled token and the next stretch of written structure, in one batch.
    Written text waits until the model is next asked, and is tokenized in one piece then
    (``}, "reason": "`` as the model itself would have split it)."""

    def __init__(
        self,
        llama: Any,
        prompt: list[int],
        sampling: dict[str, Any],
        text_tokens: int,
    ) -> None:
        self.llama = llama
        self.tokens = list(prompt)
        self.parts: list[bytes] = []
        self.pending = ""
        self.sampling = sampling
        self.text_tokens = text_tokens
        self.cut = False
        #: The room the items of each open list share (every token sampled inside it counts),
        #: innermost last.
        self.rooms: list[int] = []

    # the two moves: write, and let the model write

    def write(self, text: str) -> None:
        self.pending += text

    def flush(self) -> None:
        if self.pending:
            encoded = self.pending.encode("utf-8")
            self.tokens += self.llama.tokenize(encoded, add_bos=False, special=False)
            self.parts.append(encoded)
            self.pending = ""

    def sample(self, grammar: str, max_tokens: int, done: Callable[[str], bool]) -> str:
        """The model's next tokens under ``grammar`` (its ``root``), until ``done`` holds for
        what it wrote, the grammar ends, or ``max_tokens``; the text it wrote."""
        from llama_cpp import LlamaGrammar, llama_vocab_is_eog

        from loom_sim.models.llama_sampling import checking_first

        self.flush()
        llama = self.llama
        if self.sampling.get("seed") is not None:
            llama.set_seed(self.sampling["seed"])
        written = b""
        count = 0
        # a value's draw checks the token the model chose first (see llama_sampling)
        with checking_first(llama):
            for token in llama.generate(
                list(self.tokens),
                temp=self.sampling["temperature"],
                top_k=40,
                top_p=0.95,
                min_p=0.05,
                repeat_penalty=1.0,
                grammar=LlamaGrammar.from_string(f"root ::= {grammar}", verbose=False),
            ):
                if llama_vocab_is_eog(llama._model.vocab, token):
                    break  # the grammar is complete (a model that can only end here must)
                piece = llama.detokenize([token], prev_tokens=self.tokens)
                self.tokens.append(token)
                written += piece
                count += 1
                text = written.decode("utf-8", errors="ignore")
                if count >= max_tokens or done(text):
                    break
        self.rooms = [room - count for room in self.rooms]
        self.parts.append(written)
        return written.decode("utf-8", errors="ignore")

    # the values

    def value(self, plan: Plan, closers: str) -> str:
        """Write one value; the closer (one of ``closers``, the characters its container
        may put after it) the model wrote with its last token, or ""."""
        if isinstance(plan, Fields):
            return self._fields(plan)
        if isinstance(plan, Items):
            return self._items(plan)
        if isinstance(plan, Text):
            return self._text(plan, closers)
        end = _any_of(list(closers)) if closers else None
        if isinstance(plan, Number):
            grammar = f"({plan.grammar}) {end}" if end else f"({plan.grammar})"
            text = self.sample(grammar, plan.most, lambda t: bool(t) and t[-1] in closers)
            return text[-1] if text and text[-1] in closers else ""
        literals = plan.literals

        def chosen(text: str) -> bool:
            if text and text[-1] in closers:
                return True
            return text in literals and not any(
                lit != text and lit.startswith(text) for lit in literals
            )

        # A closer is offered only where a literal could go on (``1`` of ``1``-``10``).
        ambiguous = _ambiguous(literals)
        grammar = _any_of(literals) + (f" {end}?" if end and ambiguous else "")
        text = self.sample(grammar, _longest(literals) + 1, chosen)
        return text[-1] if ambiguous and text and text[-1] in closers else ""

    def _text(self, plan: Text, closers: str) -> str:
        room = _text_room(plan, self.rooms[-1] if self.rooms else self.text_tokens)
        self.write('"')
        if room <= 0:
            self.write('"')
            return ""
        end = f" {_any_of(list(closers))}?" if closers else ""
        text = self.sample(_TEXT + end, room, lambda t: '"' in t)
        if '"' not in text:
            self.cut = True
            self.write('"')
            return ""
        return text[text.index('"') + 1 :][:1]

    def _fields(self, plan: Fields) -> str:
        last = len(plan.fields) - 1
        closed = ""
        for index, (name, sub) in enumerate(plan.fields):
            lead = "{" if index == 0 else ("" if closed == "," else ",") + " "
            self.write(f"{lead}{json.dumps(name, ensure_ascii=False)}: ")
            closed = self.value(sub, "}" if index == last else ",")
        if closed != "}":
            self.write("}")
        return ""

    def _items(self, plan: Items) -> str:
        self.write("[")
        self.rooms.append(self.text_tokens)
        try:
            count = 0
            while plan.max_items is None or count < plan.max_items:
                if count == 0 and plan.min_items == 0 and not self._opens(plan.item):
                    break
                if plan.max_items is not None and count + 1 >= plan.max_items:
                    closers = "]"
                else:
                    closers = ",]" if count + 1 >= plan.min_items else ","
                closed = self.value(plan.item, closers) or self._separator(plan, count + 1)
                count += 1
                if closed == "]":
                    return ""
                self.write(" ")
            self.write("]")
            return ""
        finally:
            self.rooms.pop()

    def _opens(self, item: Plan) -> bool:
        """Whether the model starts a first item of a list that may stay empty."""
        start = {Text: '"', Fields: "{", Items: "["}.get(type(item))
        if start is None:
            return True  # a number or a literal: asking would cost as much as writing one
        self.flush()
        kept = (len(self.tokens), len(self.parts), list(self.rooms))
        chose = self.sample(_any_of(["]", start]), 1, lambda t: True)
        # what it chose is written again below, as structure
        del self.tokens[kept[0] :], self.parts[kept[1] :]
        self.rooms = kept[2]
        return chose == start

    def _separator(self, plan: Items, count: int) -> str:
        """After ``count`` items with no closer written: "," or "]", by the rules or the
        model's choice (a shared room used up ends the list)."""
        may_end = count >= plan.min_items
        may_go_on = plan.max_items is None or count < plan.max_items
        if may_go_on and not may_end:
            self.write(",")
            return ","
        if may_go_on and self.rooms[-1] > 0:
            chose = self.sample(_any_of([",", "]"]), 1, lambda t: True)
            if chose in (",", "]"):
                return chose
        self.write("]")
        return "]"

    def answer(self) -> str:
        self.flush()
        return b"".join(self.parts).decode("utf-8", errors="replace")


#: A string's characters up to its closing quote: no escapes, no control characters.
_TEXT = r'[^"\\\x00-\x1f]* "\""'


def _ambiguous(literals: tuple[str, ...]) -> bool:
    return any(a != b and b.startswith(a) for a in literals for b in literals)


def _longest(literals: tuple[str, ...]) -> int:
    return max(len(literal) for literal in literals)


def _text_room(plan: Text, room: int) -> int:
    return room if plan.max_chars is None else min(room, plan.max_chars)


def most_sampled(plan: Plan, text_tokens: int) -> int:
    """The most tokens the model may sample writing ``plan`` (an upper bound, for fitting
    the answer into the context before it is begun)."""
    if isinstance(plan, Fields):
        return sum(most_sampled(sub, text_tokens) for _, sub in plan.fields)
    if isinstance(plan, Choice):
        return _longest(plan.literals) + 1
    if isinstance(plan, Number):
        return plan.most
    if isinstance(plan, Text):
        return _text_room(plan, text_tokens) + 1
    item = most_sampled(plan.item, text_tokens) + 1  # an item and its separator
    most = max(text_tokens + item, plan.min_items * item)
    return most if plan.max_items is None else min(most, plan.max_items * item)


def most_written(plan: Plan, text_tokens: int, tokens_of: Callable[[str], int]) -> int:
    """The most tokens of structure writing ``plan`` may read (keys, braces, quotes and
    separators, as :class:`_Writer` writes them; ``tokens_of`` counts a piece's tokens). With
    :func:`most_sampled`, what an answer may take of the context: less than half of what the
    skeleton answer's tokens twice over allowed for a judge's answer."""
    if isinstance(plan, Fields):
        pieces = 1  # the closing brace, when the model did not write it
        for index, (name, sub) in enumerate(plan.fields):
            key = json.dumps(name, ensure_ascii=False)
            lead = tokens_of(f"{{{key}: ") if index == 0 else tokens_of(f", {key}: ")
            # +1: a piece read together with the one before it may split differently
            pieces += lead + 1 + most_written(sub, text_tokens, tokens_of)
        return pieces
    if isinstance(plan, Text):
        return 2  # its opening quote, and a closing one when its room runs out
    if isinstance(plan, Items):
        # Each item takes at least one sampled token of the list's shared room.
        count = text_tokens if plan.max_items is None else plan.max_items
        count = max(count, plan.min_items)
        return 2 + count * (2 + most_written(plan.item, text_tokens, tokens_of))
    return 0  # a literal or a number is sampled, closer and all


def write_answer(
    llama: Any,
    prompt: list[int],
    plan: Plan,
    *,
    temperature: float,
    seed: int | None,
    text_tokens: int,
) -> Written:
    """Write an answer of ``plan`` after ``prompt`` (the chat prompt's tokens): structure
    written, values sampled. ``text_tokens``: the most tokens each free-text value (or each
    list's items together) may take."""
    writer = _Writer(llama, prompt, {"temperature": temperature, "seed": seed}, text_tokens)
    writer.value(plan, "")
    return Written(
        writer.answer(),
        prompt_tokens=len(prompt),
        answer_tokens=len(writer.tokens) - len(prompt),
        cut=writer.cut,
    )
