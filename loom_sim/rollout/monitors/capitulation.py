"""Capitulation phrases: the words of a persona giving in ("you're right", "maybe I should
reconsider"), as ``interaction.anti_capitulation.forbidden_phrases`` lists them.

Agreement loops are the Loom plan's first known failure, and telling the persona not to say
these words is not enough: a helpful interlocutor talks it into them. So one deterministic
check serves twice — the repetition guard runs it on every candidate, before the interlocutor
sees it, and regenerates with the reason and a redirect; the ``capitulation`` scorer runs it
on every committed message after the fact, so a message that got through (out of retries) is
flagged. Matching is case-insensitive, on word boundaries, with curly apostrophes read as
straight ones ("You’re right" is "you're right").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


def _normal(text: str) -> str:
    return " ".join(text.translate(_APOSTROPHES).lower().split())


class CapitulationCheck:
    """Finds the configured phrases in a message (whole words, any case or apostrophe)."""

    def __init__(self, phrases: Sequence[str]):
        self.phrases = [p for p in phrases if p.strip()]
        self._patterns = [
            (phrase, re.compile(r"(?<!\w)" + re.escape(_normal(phrase)) + r"(?!\w)"))
            for phrase in self.phrases
        ]

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def found(self, text: str) -> list[str]:
        """The phrases ``text`` contains, in config order."""
        normal = _normal(text)
        return [phrase for phrase, pattern in self._patterns if pattern.search(normal)]
