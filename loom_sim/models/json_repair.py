"""A tolerant JSON parser for model replies.

Models asked for JSON wrap it in prose ("Sure! Here is..."), in Markdown fences, leave
trailing commas, or stop mid-object when they hit ``max_tokens``. Judges and monitors need the
object anyway, so every provider's reply goes through :func:`parse_json`, which tries, in order
(the fallbacks of the Faultline client, made string-aware):

1. the whole text as JSON;
2. the contents of each Markdown code fence;
3. bracket-balanced extraction: from each ``{`` or ``[`` in turn, the span up to its matching
   bracket — strings and escapes respected, so a ``}`` inside a string does not end the object
   — parsed as is and again with trailing commas removed; a span that does not parse is
   skipped (prose such as "use {name} here" is not JSON);
4. truncation repair for a span that never closes (the reply was cut off inside it, so the
   values nested in it are not searched separately): close an open string, drop a dangling key,
   colon or trailing comma, close the open brackets in stack order. If that still does not
   parse, cut back to the last complete member of the innermost container and try again, so a
   truncated reply yields the longest prefix that is valid JSON.

Nothing else is guessed (no single quotes, no comments, no ``True``/``None``): a reply that is
not JSON by any of these readings raises :class:`BadModelReply` with a short excerpt.

:func:`read_json` also says *which* reading worked. A caller that asked for a schema needs it:
a value read by truncation repair from a reply that hit its token limit may be missing its last
members or end in a cut-off string, so the structured call
(:mod:`loom_sim.judging.structured`) accepts it only if it still validates, and otherwise asks
again with more room instead of trusting the repaired prefix.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from loom_sim.models.base import BadModelReply

__all__ = ["JsonReading", "parse_for_schema", "parse_json", "read_json"]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_OPEN = {"{": "}", "[": "]"}
_CLOSE = {"}": "{", "]": "["}
_MAX_CANDIDATES = 32  # starting brackets tried before giving up (bounds the cost of prose)
_MAX_CUTS = 64  # truncation cut-backs tried per candidate
_EXCERPT = 80


class _NoParse(Exception):
    pass


Reading = Literal["whole", "fence", "balanced", "truncation"]


class JsonReading(NamedTuple):
    """A value read from a reply, and how: the whole text, a fenced block, a balanced span,
    or a span cut off mid-way and closed by truncation repair."""

    value: Any
    how: Reading


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _NoParse from None


def _strip_trailing_commas(text: str) -> str:
    """Remove commas that directly precede ``}`` or ``]`` (outside strings)."""
    out: list[str] = []
    in_string = escaped = False
    pending_comma = -1  # index in ``out`` of a comma that may turn out to be trailing
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in "}]" and pending_comma >= 0:
            del out[pending_comma]
        if ch == ",":
            pending_comma = len(out)
        elif not ch.isspace():
            pending_comma = -1
        if ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out)


def _scan(text: str, start: int) -> tuple[int, list[str], bool, list[tuple[int, tuple[str, ...]]]]:
    """Walk from the bracket at ``start``.

    Returns ``(end, stack, in_string, cuts)``: ``end`` is the index after the matching close
    bracket (or ``len(text)`` if the span is truncated, or -1 on a mismatched bracket);
    ``stack`` the brackets still open; ``cuts`` the places where the text can be cut and still
    hold only complete members, with the brackets open there: after each opening bracket and
    before each comma.
    """
    stack: list[str] = []
    cuts: list[tuple[int, tuple[str, ...]]] = []
    in_string = escaped = False
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _OPEN:
            stack.append(ch)
            cuts.append((i + 1, tuple(stack)))
        elif ch in _CLOSE:
            if not stack or stack[-1] != _CLOSE[ch]:
                return -1, stack, False, cuts
            stack.pop()
            if not stack:
                return i + 1, stack, False, cuts
        elif ch == ",":
            cuts.append((i, tuple(stack)))
        i += 1
    return n, stack, in_string, cuts


def _close(stack: Sequence[str]) -> str:
    return "".join(_OPEN[b] for b in reversed(stack))


_DANGLING = re.compile(r'(,\s*|\s*"(?:[^"\\]|\\.)*"\s*:?\s*|\s*:\s*|[-+.eE]+)$')


_PARTIAL_UNICODE = re.compile(r"(?<!\\)((?:\\\\)*)\\u[0-9a-fA-F]{0,3}$")


def _repair_truncated(span: str, stack: list[str], in_string: bool) -> Any:
    """Close a span cut off mid-way; ``_NoParse`` when no reading works."""
    body = span
    if in_string:
        body = _PARTIAL_UNICODE.sub(r"\1", body)
        if (len(body) - len(body.rstrip("\\"))) % 2:  # an escape cut after its backslash
            body = body[:-1]
        body += '"'
    attempt = body.rstrip()
    for _ in range(3):  # a dangling comma, then a key with its colon, then a partial number
        try:
            return _loads(_strip_trailing_commas(attempt + _close(stack)))
        except _NoParse:
            pass
        trimmed = _DANGLING.sub("", attempt)
        if trimmed == attempt:
            break
        attempt = trimmed.rstrip()
    raise _NoParse


_VALUE_START = frozenset('"{[-0123456789tfn]')


def _candidate(text: str, start: int) -> JsonReading:
    """The JSON value starting at the bracket at ``start``; ``_NoParse`` if there is none.

    A span that closes is parsed as is, then without trailing commas. A span that runs off
    the end of the text is the reply cut off mid-value (everything after ``start`` is inside
    it), so it is repaired rather than searched for smaller values.
    """
    end, stack, in_string, cuts = _scan(text, start)
    if end < 0:
        raise _NoParse
    if not stack:
        span = text[start:end]
        try:
            return JsonReading(_loads(span), "balanced")
        except _NoParse:
            return JsonReading(_loads(_strip_trailing_commas(span)), "balanced")
    # Only a bracket that really opens JSON counts: "I think {maybe" is prose, not a value.
    first = text[start + 1 :].lstrip()[:1]
    if first and first not in ('"}' if text[start] == "{" else _VALUE_START):
        raise _NoParse
    try:
        return JsonReading(_repair_truncated(text[start:], stack, in_string), "truncation")
    except _NoParse:
        pass
    # Cut back to the last complete member, innermost first, until something parses.
    for index, opened in reversed(cuts[-_MAX_CUTS:]):
        try:
            prefix = text[start:index].rstrip() + _close(opened)
            return JsonReading(_loads(_strip_trailing_commas(prefix)), "truncation")
        except _NoParse:
            continue
    raise _NoParse


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"


def parse_json(text: str, *, model: str | None = None, prefer_object: bool = False) -> Any:
    """The JSON value in a model's reply, repaired if need be.

    The first value found wins; with ``prefer_object`` (the schema asked for an object) the
    first *object* wins over an earlier array, so "see [1]: {...}" yields the object.

    Raises :class:`BadModelReply` (naming ``model`` when given) when no reading parses;
    never any other exception.
    """
    return read_json(text, model=model, prefer_object=prefer_object).value


def read_json(text: str, *, model: str | None = None, prefer_object: bool = False) -> JsonReading:
    """:func:`parse_json`, saying which reading found the value (see the module docstring)."""
    if not isinstance(text, str):
        raise BadModelReply(f"{model or 'the model'} returned no text where JSON was expected.")
    stripped = text.strip()
    try:
        whole = _loads(stripped)
    except _NoParse:
        pass
    else:
        # a reply that is one JSON string holding an object or array (`"{...}"`) was encoded
        # twice: the value asked for is inside it
        inner = whole.strip() if isinstance(whole, str) else ""
        if inner[:1] in ("{", "["):
            try:
                return JsonReading(_loads(inner), "whole")
            except _NoParse:
                pass
        return JsonReading(whole, "whole")
    for fenced in _FENCE.findall(stripped):
        try:
            return JsonReading(_loads(fenced.strip()), "fence")
        except _NoParse:
            pass
    pattern = r"\{" if prefer_object else r"[\[{]"
    for opening in (pattern, r"\[") if prefer_object else (pattern,):
        for match in itertools.islice(re.finditer(opening, stripped), _MAX_CANDIDATES):
            try:
                return _candidate(stripped, match.start())
            except (_NoParse, RecursionError):
                continue
    who = model or "the model"
    raise BadModelReply(
        f"{who} was asked for JSON but replied with none that could be read "
        f"(reply starts {_excerpt(stripped)!r}); try a larger max_tokens or a stronger model."
    )


def parse_for_schema(text: str, schema: Any, *, model: str | None = None) -> Any:
    """What the clients put in ``ModelResponse.parsed``: the JSON in ``text`` (an object
    preferred when ``schema`` describes one), or ``None`` when there is none — the text is
    still returned, and the caller decides whether to ask again."""
    wants_object = isinstance(schema, dict) and (
        schema.get("type") == "object" or "properties" in schema
    )
    try:
        return parse_json(text, model=model, prefer_object=wants_object)
    except BadModelReply:
        return None
