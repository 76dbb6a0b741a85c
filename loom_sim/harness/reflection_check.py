"""How much a reflection says: distinct judgements tied to the turn, new since the last one.

Why: a small model fills every field of the reflection with the same sentence ("This is a
code.") or with the field's own name, and counting fields that are merely non-empty rewarded
that (0.748 for "This is a code." everywhere). Here a field counts as *written* only when it
says something of its own: not empty, not a stock filler, not its own field name, not the
action typed again, and not a near-copy of another field of the same reflection. A reflection
close to the previous one adds little, and is scored so.

The verdict "low" (score below :data:`LOW`) is a detector, measured on a labelled set of
hollow and adequate reflections (``tests/data/validity/harness_reflection_quality.jsonl``,
``benchmarks/validity_harness.py``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from loom_sim.harness.messages import Reflection

LOW = 0.5  # a reflection scoring below this says too little to count
SAME = 0.8  # two fields this similar say one thing
REPEAT = 0.9  # a reflection this similar to the previous one is a repeat
_WORD = re.compile(r"[a-z0-9']+")
_FIELD_NAMES = {
    "what worked",
    "what failed",
    "open questions",
    "open question",
    "next hypothesis",
    "hypothesis",
    "confidence",
}
#: What models write when they have nothing to say (and the reflection schema's own words).
FILLERS = {
    "",
    "n a",
    "na",
    "none",
    "nothing",
    "null",
    "nil",
    "unknown",
    "tbd",
    "todo",
    "string",
    "text",
    "yes",
    "no",
    "ok",
    "okay",
    "maybe",
    "not sure",
    "i don t know",
    "i do not know",
    "no idea",
    "a question",
    "a sentence",
    "one short sentence",
    "something",
    "it worked",
    "it failed",
    "nothing worked",
    "nothing failed",
    "same as before",
    "see above",
}


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio() if a and b else 0.0


def text_of(reflection: Reflection) -> str:
    r = reflection
    return " ".join([r.what_worked, r.what_failed, *r.open_questions, r.next_hypothesis])


def _says_something(text: str, earlier: Sequence[str], action: str) -> bool:
    said = _normal(text)
    if said in FILLERS or said in _FIELD_NAMES or said == _normal(action):
        return False
    words = said.split(" ")
    if len(words) < 2 or len([w for w in words if len(w) >= 3]) < 2:
        return False  # one word, or two little ones: not a judgement
    for size in (2, 1):  # "what worked: ok", "hypothesis: none"
        if " ".join(words[:size]) in _FIELD_NAMES:
            rest = " ".join(words[size:])
            if rest in FILLERS or len(rest.split()) < 2:
                return False
    return not any(_similar(said, _normal(e)) >= SAME for e in earlier)


def written(reflection: Reflection, action: str = "") -> list[bool]:
    """Whether each of the three judgements — what happened (worked or failed), the open
    questions, the next hypothesis — says something of its own."""
    r = reflection
    seen: list[str] = []
    happened = False
    for text in (r.what_worked, r.what_failed):
        if _says_something(text, seen, action):
            happened = True
        seen.append(text)
    asked = False
    for question in r.open_questions:
        if _says_something(question, seen, action):
            asked = True
        seen.append(question)
    planned = _says_something(r.next_hypothesis, seen, action)
    return [happened, asked, planned]


def tied(reflection: Reflection, action: str, signals: Sequence[str]) -> bool:
    """Whether the reflection mentions something of its turn (a word of 4+ letters of the
    action or the signals)."""
    words = {w.strip(".,:;()[]'\"/") for w in (action + " " + " ".join(signals)).lower().split()}
    text = text_of(reflection).lower()
    return any(len(w) >= 4 and w in text for w in words)


def score(
    reflection: Reflection,
    action: str = "",
    signals: Sequence[str] = (),
    previous: Reflection | None = None,
    validity: float = 1.0,
) -> float:
    """0..1: validity × specificity (distinct judgements written, tied to the turn) × a novelty
    factor (a repeat of the previous reflection keeps a quarter)."""
    marks = written(reflection, action)
    specific = (sum(marks) / len(marks)) * (1.0 if tied(reflection, action, signals) else 0.5)
    novelty = 1.0
    if previous is not None:
        similarity = _similar(_normal(text_of(previous)), _normal(text_of(reflection)))
        novelty = 0.0 if similarity > REPEAT else 1.0 - similarity
    return validity * specific * (0.25 + 0.75 * min(1.0, novelty / 0.5))


def low(
    reflection: Reflection,
    action: str = "",
    signals: Sequence[str] = (),
    previous: Reflection | None = None,
) -> bool:
    """The detector: whether a (schema-valid) reflection says too little to count."""
    return score(reflection, action, signals, previous) < LOW
