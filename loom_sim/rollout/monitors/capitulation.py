"""Capitulation: the words of a persona giving in ("you're right", "maybe I should
reconsider"), as ``interaction.anti_capitulation.forbidden_phrases`` lists them, and the same
concession said in other words.

Agreement loops are persona simulation's first known failure, and telling the persona not to say
these words is not enough: a helpful interlocutor talks it into them. So one deterministic
check serves twice — the repetition guard runs it on every candidate, before the interlocutor
sees it, and regenerates with the reason and a redirect; the ``capitulation`` scorer runs it
on every committed message after the fact, so a message that got through (out of retries) is
flagged.

A persona told not to say "you're right" says "you are right", "that makes sense actually" or
"maybe I'm wrong about all of this". So matching is on a normal form (any case, curly
apostrophes read as straight ones, contractions spelled out, punctuation ignored: "You’re
right," is "you are right") and goes beyond the list: :data:`CONCESSIONS` are the common
shapes of conceding the argument, each refused when a negation or a condition governs it
("you're not right", "if you were right"). The runtime monitor adds a match by meaning on top
(:mod:`loom_sim.rollout.monitors.concession`, the embedding service's vectors: "You are completely
right" and "I was so wrong" are in no list and no shape). The measured precision
and recall of both are in docs/signals.md (``benchmarks/validity_loom.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})
_CONTRACTIONS = (
    (re.compile(r"\bcan't\b"), "cannot"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'re\b"), " are"),
    (re.compile(r"\bi'm\b"), "i am"),
    (re.compile(r"'ve\b"), " have"),
    (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'d\b"), " would"),
)
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\s+(?:but|though|although)\s+")
_PUNCTUATION = re.compile(r"[^\w\s']")

#: The shapes of conceding the argument, on the normal form (see :func:`normal`).
CONCESSIONS: tuple[str, ...] = (
    r"you (?:are|were|might be|may be|could be|are probably|are absolutely|are totally) "
    r"(?:right|correct)",
    r"i (?:was |am |might be |may be |could be |have been |may have been |might have been )"
    r"(?:wrong|mistaken|overreacting|paranoid|overthinking|imagining)",
    r"maybe i (?:am|was) (?:just |being )?(?:wrong|paranoid|overreacting|imagining)",
    r"(?:it|that|this) (?:all )?(?:does |kind of |really |actually )?makes? sense",
    r"(?:you|you have|you have got|you've got) (?:a )?(?:good |fair )?point",
    r"(?:fair|good) point",
    r"point taken",
    r"i (?:see|get) (?:what you mean|your point)",
    r"i stand corrected",
    r"(?:i had|i have) not (?:thought|looked at it|seen it) (?:of it )?(?:that|like that)",
    r"i did not think of that",
    r"(?:you have|you) convinced me",
    r"(?:maybe|perhaps) i should reconsider",
    r"(?:it|this|that)(?: all)? (?:really |probably |just )?(?:is|could|might|may)"
    r"(?: all| probably| just| really)?(?: be)? (?:all |just )?"
    r"(?:in my head|a coincidence|nothing)",
    r"(?:it )?does sound far fetched",
)
#: Words that, before a concession in its sentence, mean it is not one: negation, a condition,
#: someone else's claim being reported, a question.
_GOVERNED = re.compile(
    r"\b(?:not|never|no|nobody|if|would|whether|why|stop|you think|saying|says|thinks)\b"
)


def normal(text: str) -> str:
    """Lower case, straight apostrophes, contractions spelled out, punctuation and repeated
    spaces gone: the form phrases and concessions are matched on."""
    text = text.translate(_APOSTROPHES).lower()
    if "'" in text:  # every contraction has one; most clauses have none
        for pattern, spelled in _CONTRACTIONS:
            text = pattern.sub(spelled, text)
    return " ".join(_PUNCTUATION.sub(" ", text.replace("'", "")).split())


def sentences(text: str) -> list[str]:
    """The clauses a concession is looked for in: sentences, split again at "but"."""
    return [s.strip() for s in _SENTENCE.split(text.translate(_APOSTROPHES)) if s.strip()]


class CapitulationCheck:
    """Finds the configured phrases and the concessions in a message."""

    def __init__(self, phrases: Sequence[str], *, concessions: bool = True):
        self.phrases = [p for p in phrases if p.strip()]
        escaped = [re.escape(normal(phrase)) for phrase in self.phrases]
        self._patterns = [
            (phrase, re.compile(r"(?<!\w)" + e + r"(?!\w)"))
            for phrase, e in zip(self.phrases, escaped, strict=True)
        ]
        # Concessions only where phrases are: a config that forbids none asked for no check.
        self._concessions = (
            [re.compile(r"(?<!\w)" + p + r"(?!\w)") for p in CONCESSIONS]
            if concessions and self._patterns
            else []
        )
        # Each list as one alternation, searched first: it matches a clause exactly when one
        # of its patterns does (a search tries every alternative at every position), and most
        # clauses match none, so a clause costs two searches, not one per pattern (a
        # four-sentence message took 120 µs through the 21 patterns one by one).
        self._any_phrase = _either(escaped)
        self._any_concession = _either(list(CONCESSIONS) if self._concessions else [])

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def found(self, text: str) -> list[str]:
        """The phrases ``text`` contains, in config order, then the clauses that concede in
        other words, quoted as written. A clause that is a question, or in which a negation or
        a condition comes before the words, does not count."""
        # A monitor asks twice about one draft (what to embed for it, then whether it gives
        # in): the answer for the last text is kept.
        if self._last is not None and self._last[0] == text:
            return list(self._last[1])
        found = self._found(text)
        self._last = (text, tuple(found))
        return found

    _last: tuple[str, tuple[str, ...]] | None = None

    def _found(self, text: str) -> list[str]:
        any_phrase, any_concession = self._any_phrase, self._any_concession
        clauses = [(c, normal(c), c.rstrip().endswith("?")) for c in sentences(text)]
        quoting = [
            (said, asked) for _, said, asked in clauses if any_phrase and any_phrase.search(said)
        ]
        found = [
            phrase
            for phrase, pattern in self._patterns
            if any(not asked and _conceded(pattern, said) for said, asked in quoting)
        ]
        if any_concession is None:
            return found
        for clause, said, asked in clauses:
            if asked or (any_phrase and any_phrase.search(said)):
                continue
            if any_concession.search(said) and any(
                _conceded(pattern, said) for pattern in self._concessions
            ):
                found.append(clause)
        return found


def _either(patterns: list[str]) -> re.Pattern[str] | None:
    """One pattern matching where any of ``patterns`` does, bounded as each is; None for none."""
    if not patterns:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(f"(?:{p})" for p in patterns) + r")(?!\w)")


def _conceded(pattern: re.Pattern[str], said: str) -> bool:
    match = pattern.search(said)
    return match is not None and not _GOVERNED.search(said[: match.start()])
