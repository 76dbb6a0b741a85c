"""Where a message stands on a claim, read without a model: for, against, or neither.

Three of the debate's checks ask the same question of a text — the cheap opposition signal
(do two personas' claims take opposite sides?), the scripted detector and card writer, and the
card's citation check (does the message cited for a YES say yes?) — so they share one reading.

A text is read clause by clause. A clause takes a side on a claim when it is *about* it (it
shares content words with it, or uses a word's opposite: "ends" against "prolongs") and its
polarity is the parity of its flips: a negation ("not", "never", "n't"), a word replaced by its
opposite, "X is wrong that ..." each flip it once, so "the ferry does not pay" and "the ferry
loses money" both deny "the ferry pays". What does not assert is left out, so it takes no side:

* a reply's opening interjection ("No, the ferry pays." asserts that the ferry pays; the "No"
  answers the message replied to);
* a question, and whatever follows "whether" ("the point we can't agree on is whether the
  ferry pays" names the question; it does not answer it).

Word matching is crude on purpose (a light stemmer, a small table of opposites that are
general English, not any deck's words), and its error is measured: the labelled sets in
``tests/data/validity/debate_*.jsonl`` and ``benchmarks/validity_debate.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

_STOP = frozenset(
    """a an the and or but if of to in on at for with by from as is are was were be been being
    it its this that these those we our you your they their them he she his her i me my so than
    then there here what who whom which when why how will would can could should shall may
    might must does do did has have had not no never nobody none nor cannot right per one about
    into over under more most less just only even also all any some every own same very really
    still yet too much many each other such itself themselves ours us whether point agree
    disagree wrong true false mistaken think say said says believe sure""".split()
)
_NEGATION = re.compile(
    r"\b(not|no|never|nobody|nothing|none|neither|nor|cannot|without|hardly)\b|n't\b", re.I
)
_WRONG = re.compile(r"\b(is|are|was|were)\s+(wrong|mistaken)\b|\bit is (false|untrue)\b", re.I)
_INTERJECTION = re.compile(
    r"^\s*(no|nope|yes|yeah|right|exactly|true|well|actually|sure|okay|ok|indeed)\b\s*[,;:—–-]+\s*",
    re.I,
)
_CLAUSE = re.compile(
    r"(?<=[.!?;])\s+|\s*[;—–]\s*|,?\s+\b(?:but|while|whereas|although|though|yet)\b\s+"
    r"|,\s+and\s+|\s+and\s+(?=\w+\s+(?:is|are|was|were|has|have|makes?|says?)\b)",
    re.I,
)
_QUESTION_TAIL = re.compile(r"\bwhether\b.*$", re.I | re.S)

#: General-English opposites. Each group's words oppose every word of the other group.
OPPOSITES: tuple[tuple[str, str], ...] = (
    (
        "end stop halt scrap axe abolish cancel close shut",
        "prolong extend continue keep preserve retain",
    ),
    ("close shut", "open reopen"),
    ("pay profit profitable earn earns gain", "lose lost loss losses cost deficit subsidy"),
    (
        "rise rose risen increase grow grew grown climb climbed higher up",
        "fall fell fallen decrease shrink shrank drop dropped lower down decline declined",
    ),
    ("more", "fewer less"),
    ("cut reduce reduced lower ease eased", "raise raised worsen worsened add added"),
    ("work worked succeed succeeded success effective", "fail failed failure useless"),
    (
        "help helped benefit benefits improve improved",
        "hurt harm harmed damage damaged worsen worsened",
    ),
    ("safe safer", "dangerous unsafe risky"),
    ("cheap cheaper affordable", "expensive costly dear"),
    ("support supports back backs", "oppose opposes reject rejects"),
    ("bring brings attract attracts draw draws", "repel repels deter deters drive drives"),
    ("build built expand expanded", "demolish demolished remove removed"),
    ("enough sufficient", "insufficient inadequate"),
    ("win won", "lose lost"),
    ("good better best", "bad worse worst"),
    ("clean cleaner", "dirty dirtier polluted"),
    ("full busy crowded", "empty quiet deserted"),
    ("early", "late"),
    ("allow permit", "ban forbid prohibit"),
    ("save saved", "waste wasted cost"),
    ("short shorter shorten shortened", "long longer lengthen lengthened"),
)


def stem(word: str) -> str:
    """A crude stem: plural and verb endings and a final ``e`` dropped, doubled consonants
    undone ("closes", "closed", "closing" -> "clos"; "cutting" -> "cut")."""
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith("ied"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


@cache
def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for left, right in OPPOSITES:
        a, b = {stem(w) for w in left.split()}, {stem(w) for w in right.split()}
        for word in a:
            table.setdefault(word, set()).update(b - a)
        for word in b:
            table.setdefault(word, set()).update(a - b)
    return {k: frozenset(v) for k, v in table.items()}


def content(text: str) -> set[str]:
    """The stems of a text's content words."""
    words = re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower())
    return {stem(w) for w in words if w not in _STOP and not w.endswith("n't")}


def clauses(text: str) -> list[str]:
    """The clauses of ``text`` that assert something: questions and "whether ..." tails
    dropped, a reply's opening interjection removed."""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        if sentence.rstrip().endswith("?"):
            continue
        for raw in _CLAUSE.split(sentence):
            if not raw:
                continue
            part = _QUESTION_TAIL.sub("", _INTERJECTION.sub("", raw)).strip(" ,.")
            if content(part):
                out.append(part)
    return out


def flips(clause: str) -> int:
    """How many times ``clause`` flips its polarity: negations, and "X is wrong that ..."."""
    return len(_NEGATION.findall(_INTERJECTION.sub("", clause))) + len(_WRONG.findall(clause))


@dataclass(frozen=True)
class Reading:
    """How one clause reads against another: how much they share, and whether the one
    contradicts the other."""

    shared: int  # content words in common, opposites included
    overlap: float  # shared / the smaller clause's content words
    opposite: bool  # opposite polarity on what they share


def compare(a: str, b: str) -> Reading:
    wa, wb = content(a), content(b)
    if not wa or not wb:
        return Reading(0, 0.0, False)
    table = _opposites()
    same = wa & wb
    swapped = {w for w in wa - same if table.get(w, frozenset()) & (wb - same)}
    shared = len(same) + len(swapped)
    turns = flips(a) + flips(b) + len(swapped)
    return Reading(shared, shared / min(len(wa), len(wb)), turns % 2 == 1)


class Side(StrEnum):
    FOR = "for"
    AGAINST = "against"
    NEITHER = "neither"


#: A clause is about a claim when it shares this share of the smaller one's content words
#: (and at least two words, or one of a one-word clause).
ABOUT = 0.5


def _about(reading: Reading, a: str, b: str) -> bool:
    need = 2 if min(len(content(a)), len(content(b))) > 1 else 1
    return reading.shared >= need and reading.overlap >= ABOUT


def side(text: str, claim: str) -> Side:
    """Where ``text`` stands on ``claim``: the side of its clause most about the claim (the
    claim read as its own first asserting clause); NEITHER when no clause is about it, or
    when the clauses that are take both sides."""
    core = clauses(claim)
    if not core:
        return Side.NEITHER
    best: list[Reading] = []
    for clause in clauses(text):
        reading = compare(clause, core[0])
        if _about(reading, clause, core[0]):
            best.append(reading)
    if not best:
        return Side.NEITHER
    top = max(r.shared for r in best)
    sides = {r.opposite for r in best if r.shared == top}
    if len(sides) != 1:
        return Side.NEITHER
    return Side.AGAINST if sides.pop() else Side.FOR


def closest(later: str, earlier: str) -> Reading | None:
    """How the two clauses most about each other read (None when no clause of one is about
    any clause of the other)."""
    best: Reading | None = None
    for a in clauses(later):
        for b in clauses(earlier):
            reading = compare(a, b)
            if _about(reading, a, b) and (
                best is None or (reading.shared, reading.overlap) > (best.shared, best.overlap)
            ):
                best = reading
    return best


def opposed(later: str, earlier: str) -> bool | None:
    """Do two messages take opposite sides? True (opposite), False (the same side), None (they
    share no claim). The pair of clauses most about each other decides, so a message that
    grants one side's point in one clause and the other side's in the next opposes neither."""
    best = closest(later, earlier)
    return None if best is None else best.opposite


def dispute(later: str, earlier: str) -> tuple[float, str] | None:
    """The claim two messages dispute, if they do: (how much of it they share, the claim as
    one clause — the affirmative clause of the opposed pair, the earlier message's when both
    or neither negate)."""
    best: tuple[float, int, str, str] | None = None
    for a in clauses(later):
        for b in clauses(earlier):
            reading = compare(a, b)
            if not (_about(reading, a, b) and reading.opposite):
                continue
            if best is None or (reading.overlap, reading.shared) > best[:2]:
                best = (reading.overlap, reading.shared, a, b)
    if best is None:
        return None
    overlap, _, a, b = best
    chosen = (a if flips(b) and not flips(a) else b).strip().rstrip(".!")
    return overlap, chosen[:1].upper() + chosen[1:] + "."
