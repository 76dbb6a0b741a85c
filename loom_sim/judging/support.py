"""Whether a judge's evidence points at something that is there.

Why: a model asked for ``{"met": …, "evidence": "one short sentence"}`` can answer with the
template itself, ``met: true``, before anything has happened — and a criterion that stays met
once met would keep that forever. A "met" counts only when its evidence is *supported*: it
quotes the transcript (a quoted span found in it, or a run of :data:`RUN_WORDS` words taken from
it verbatim) or names an event or a file the session has (an event's type, the id of what it
made, a file's name). This is checked the way crux cards' citations are: against the records,
never the model's word.

The check is a detector, measured on a labelled set of supported and unsupported evidence
(``tests/data/validity/harness_supported_met.jsonl``, ``benchmarks/validity_harness.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import Any

RUN_WORDS = 6  # this many words in a row from the transcript is a quote, marks or not
MIN_QUOTE_WORDS = 2
MIN_QUOTE_CHARS = 8
_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|‘([^’]+)’|`([^`]+)`|(?<!\w)\'([^\']+)\'(?!\w)')
_WORD = re.compile(r"[\w./-]+")
#: The answer templates' own words: never evidence, whatever the transcript holds.
TEMPLATES = {"one short sentence", "a short sentence", "evidence", "short sentence", "string"}


def _words(text: str) -> list[str]:
    return [w.strip(".-/").lower() for w in _WORD.findall(text) if w.strip(".-/")]


#: A name that is an identifier, not an English word: it has a digit, ``_``, ``-`` or ``.``.
_IDENTIFIER = re.compile(r"[\d_.-]")
#: Words that say a quote is what the user sent, not what the program printed.
_USER_SAID = re.compile(
    r"\b(?:user|persona|they|he|she|typed|types|sent|sends|entered|enters|asked|asks|ran|runs"
    r"|wrote|writes|command|input|tried|requested|query|queries|statement|request)\b[^\"“‘`']{0,40}$",
    re.IGNORECASE,
)
#: An ellipsis in a quote: the parts either side are each quoted.
_ELLIPSIS = re.compile(r"\s*(?:…|\.\.\.)\s*")
#: ``page_rendered event``, ``event page_rendered``: the evidence names an event type.
_NAMED_EVENT = re.compile(r"\b(\w+_\w+)\s+events?\b|\bevents?\s+`?(\w+_\w+)`?", re.IGNORECASE)
#: a file path in the evidence: something/with/slashes.ext
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.\w+)")


def names_of(events: Iterable[dict[str, Any]], files: Iterable[str]) -> set[str]:
    """What evidence may name: event types, the ids of what events made, file names, and the
    stems of those that are identifiers (``out1_blend``, not ``notes``: a plain word in a
    sentence names nothing)."""
    found: set[str] = set()
    for event in events:
        kind = event.get("type")
        if isinstance(kind, str) and event.get("ok") is not False and kind != "error":
            found.add(kind.lower())
        output = event.get("output")
        if isinstance(output, dict) and isinstance(output.get("id"), str):
            found.add(output["id"].lower())
    for path in files:
        name = PurePath(path).name.lower()
        if name:
            found.add(name)
            found.add(PurePath(name).stem)
    return {
        n
        for n in found
        if len(n) >= 3 and n not in {"reply", "event", "error"} and _IDENTIFIER.search(n)
    }


def _event_types(events: Iterable[dict[str, Any]]) -> set[str]:
    return {
        e["type"].lower()
        for e in events
        if isinstance(e.get("type"), str) and e.get("ok") is not False and e["type"] != "error"
    }


def _is_event_type(quote: str, evidence: str, match: re.Match[str], types: set[str]) -> bool:
    """A quoted word that is the type of an event the session has, called an event."""
    near = evidence[max(0, match.start() - 12) : match.end() + 12].lower()
    return "event" in near and quote.strip().lower() in types


def support(
    evidence: str,
    transcript: Sequence[str],
    events: Iterable[dict[str, Any]] = (),
    files: Iterable[str] = (),
) -> str | None:
    """What in the session ``evidence`` quotes or names, or None when it points at nothing.

    ``transcript``: the texts of the exchanges judged, alternating what the user sent and what
    the program replied (user first); ``events``: the target's events so far; ``files``: the
    files it made so far.

    Evidence that misquotes — a quoted span found nowhere in the session, an event type that
    never occurred, a path never written — is unsupported whatever else it says: it shows the
    evidence was made up, not read. A quote found only in what the user sent supports only
    evidence that says the user sent it.
    """
    said = " ".join(_words(evidence))
    if not said or said in TEMPLATES:
        return None
    events = list(events)
    files = list(files)
    replies = " " + " ".join(" ".join(_words(t)) for t in transcript[1::2]) + " "
    sent = " " + " ".join(" ".join(_words(t)) for t in transcript[0::2]) + " "
    types = _event_types(events)
    found: str | None = None
    for match in _QUOTED.finditer(evidence):
        quote = next(g for g in match.groups() if g)
        if _is_event_type(quote, evidence, match, types):
            found = found or f"names the {quote.strip().lower()!r} event, which the session has"
            continue
        parts = [_words(p) for p in _ELLIPSIS.split(quote) if p.strip()]
        if sum(len(p) for p in parts) < MIN_QUOTE_WORDS or len(quote.strip()) < MIN_QUOTE_CHARS:
            continue
        runs = [f" {' '.join(p)} " for p in parts if p]
        if all(run in replies for run in runs):
            found = found or f"quotes the transcript: {quote.strip()[:80]!r}"
        elif all(run in sent for run in runs) and _USER_SAID.search(evidence[: match.start()]):
            found = found or f"quotes what the user sent: {quote.strip()[:80]!r}"
        else:
            return None  # a misquote
    for match in _NAMED_EVENT.finditer(evidence):
        named = (match.group(1) or match.group(2)).lower()
        if named not in types:
            return None  # an event that never happened
    produced = [f.lower().replace("\\", "/") for f in files]
    for match in _PATH.finditer(evidence):
        path = match.group(1).lower()
        written = any(f == path or f.endswith("/" + path) for f in produced)
        if not written and f" {' '.join(_words(path))} " not in replies:
            return None  # a file never written, nor named by the program
    if found:
        return found
    words = said.split()
    for i in range(len(words) - RUN_WORDS + 1):
        run = " ".join(words[i : i + RUN_WORDS])
        if f" {run} " in replies:
            return f"quotes the transcript: {run!r}"
    lowered = evidence.lower()
    for name in sorted(names_of(events, files), key=len, reverse=True):
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", lowered):
            return f"names {name!r}, which the session has"
    for kind in sorted(types, key=len, reverse=True):  # a plain-word type, called an event
        if re.search(
            rf"\b{re.escape(kind)}\s+events?\b|\bevents?\s+`?{re.escape(kind)}\b", lowered
        ):
            return f"names the {kind!r} event, which the session has"
    return None
