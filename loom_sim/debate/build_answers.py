"""What each step of the contract builder must answer: its JSON Schema and its check.

A schema says what a step needs (ids from the corpus, non-empty lists) so that a model whose
sampling is held to it (the embedded one) cannot answer otherwise; the check says the same in
words, for every model, with a reason the model can act on when it is asked again.
"""

from __future__ import annotations

import re
from typing import Any

from loom_sim.debate.contract import (
    FENCE_MARKER,
    MAX_QUOTE_CHARS,
    MIN_QUOTE_WORDS,
    EvidencePolicy,
    no_fence_markers,
)
from loom_sim.debate.corpus import Excerpt, find_quote

#: Most sentences offered as anchor quotes: the choice is a grammar of alternatives, which
#: stays small enough to parse at once.
MOST_QUOTABLE = 300

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def quotable(excerpts: list[Excerpt]) -> list[str]:
    """The sentences of ``excerpts`` that are valid anchor quotes as they stand (3 words to 280
    characters, within one line, no fence marker), whitespace collapsed, in corpus order.

    Offered to a model held to its schema as the only quotes it may write, they make "copied
    verbatim" true by construction; the check after (:func:`anchors`) is the same for all."""
    found: dict[str, None] = {}
    for excerpt in excerpts:
        for line in excerpt.text.splitlines():
            for sentence in _SENTENCE_END.split(" ".join(line.split())):
                words = sentence.split()
                if (
                    len(words) >= MIN_QUOTE_WORDS
                    and len(sentence) <= MAX_QUOTE_CHARS
                    and not FENCE_MARKER.search(sentence)
                ):
                    found[sentence] = None
                if len(found) >= MOST_QUOTABLE:
                    return list(found)
    return list(found)


def relevance_schema(ids: list[str]) -> dict[str, Any]:
    """Only the corpus's excerpt ids, at least one: a model whose output is constrained by the
    schema (the embedded one) can then neither invent an id nor keep nothing."""
    ids_schema: dict[str, Any] = {"type": "string", "enum": ids} if ids else {"type": "string"}
    return {
        "type": "object",
        "properties": {"relevant": {"type": "array", "items": ids_schema, "minItems": 1}},
        "required": ["relevant"],
    }


# no minLength: the embedded model writes a schema of these keys by its fast path (llama_json)
_LIST = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_TEXT = {"type": "string"}
EVIDENCE = {
    "type": "object",
    "properties": {
        "acceptable_sources": _LIST,
        "unacceptable_sources": _LIST,
        "weighting_rules": _TEXT,
        "tool_pull_triggers": _TEXT,
    },
    "required": [
        "acceptable_sources",
        "unacceptable_sources",
        "weighting_rules",
        "tool_pull_triggers",
    ],
}


def anchors_schema(ids: list[str], quotes: list[str] | None = None) -> dict[str, Any]:
    """Each anchor names an excerpt of the corpus, and there is at least one; with ``quotes``
    (:func:`quotable`), each quote is one of them."""
    excerpt: dict[str, Any] = {"type": "string", "enum": ids} if ids else {"type": "string"}
    quote: dict[str, Any] = {"type": "string", "enum": quotes} if quotes else {"type": "string"}
    return {
        "type": "object",
        "properties": {
            "anchors": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"excerpt": excerpt, "quote": quote},
                    "required": ["excerpt", "quote"],
                },
            }
        },
        "required": ["anchors"],
    }


def relevant(value: Any, ids: set[str]) -> list[str]:
    chosen = value.get("relevant") if isinstance(value, dict) else None
    if not isinstance(chosen, list) or not chosen:
        raise ValueError('answer {"relevant": [ids]} with at least one id')
    unknown = [str(c) for c in chosen if str(c) not in ids]
    if unknown:
        raise ValueError(f"{', '.join(unknown[:5])} are not excerpt ids")
    return list(dict.fromkeys(str(c) for c in chosen))


def prose(text: str) -> str:
    if not text:
        raise ValueError("it is empty")
    no_fence_markers(text)
    if any(line.lstrip().startswith(("#", "- ", "* ", "• ")) for line in text.splitlines()):
        raise ValueError("it uses markdown headers or bullet points; write flowing prose")
    return " ".join(text.split())


def evidence(value: Any) -> dict[str, Any]:
    try:
        return EvidencePolicy.model_validate(value).model_dump()
    except Exception as err:
        raise ValueError(f"not an evidence policy ({str(err).splitlines()[0]})") from None


def anchors(
    value: Any, excerpts: list[Excerpt], most: int
) -> tuple[list[dict[str, str]], list[str]]:
    """The verified anchors (quote, source, date) and the quotes rejected as not verbatim."""
    items = value.get("anchors") if isinstance(value, dict) else None
    if not isinstance(items, list):
        raise ValueError('answer {"anchors": [{"excerpt": id, "quote": text}]}')
    kept: list[dict[str, str]] = []
    rejected: list[str] = []
    for item in items[:most]:
        quote = " ".join(str((item or {}).get("quote", "")).split())
        if not quote:
            continue
        long_enough = len(quote.split()) >= MIN_QUOTE_WORDS
        fits = len(quote) <= MAX_QUOTE_CHARS and long_enough and not FENCE_MARKER.search(quote)
        found = find_quote(quote, excerpts) if fits else None
        if found is None:
            rejected.append(quote)
            continue
        kept.append({"content": quote, "source": found.source, "date": found.date})
    if not kept:
        shown = "; ".join(repr(q[:60]) for q in rejected[:3])
        raise ValueError(
            "no quote occurs verbatim in the excerpts (each must be copied exactly from one line "
            f"of one excerpt, {MIN_QUOTE_WORDS} words to {MAX_QUOTE_CHARS} characters): {shown}"
        )
    return kept, rejected
