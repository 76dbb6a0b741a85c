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


def names_of(events: Iterable[dict[str, Any]], files: Iterable[str]) -> set[str]:
    """What evidence may name: event types, the ids of what events made, file names."""
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
    return {n for n in found if len(n) >= 3 and n not in {"reply", "event", "error"}}


def support(
    evidence: str,
    transcript: Sequence[str],
    events: Iterable[dict[str, Any]] = (),
    files: Iterable[str] = (),
) -> str | None:
    """What in the session ``evidence`` quotes or names, or None when it points at nothing.

    ``transcript``: the texts of the exchanges judged (what was typed and what came back);
    ``events``: the target's events so far; ``files``: the files it made so far.
    """
    said = " ".join(_words(evidence))
    if not said or said in TEMPLATES:
        return None
    spoken = " ".join(" ".join(_words(t)) for t in transcript)
    padded = f" {spoken} "
    for groups in _QUOTED.findall(evidence):
        quote = next(g for g in groups if g)
        words = _words(quote)
        if len(words) >= MIN_QUOTE_WORDS and len(quote.strip()) >= MIN_QUOTE_CHARS:
            if f" {' '.join(words)} " in padded:
                return f"quotes the transcript: {quote.strip()[:80]!r}"
    words = said.split()
    for i in range(len(words) - RUN_WORDS + 1):
        run = " ".join(words[i : i + RUN_WORDS])
        if f" {run} " in padded:
            return f"quotes the transcript: {run!r}"
    lowered = evidence.lower()
    for name in sorted(names_of(events, files), key=len, reverse=True):
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", lowered):
            return f"names {name!r}, which the session has"
    return None
