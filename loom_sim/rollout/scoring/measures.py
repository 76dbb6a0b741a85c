"""Deterministic text measures for naturalness: lexical variety and structural diversity.

Distinct-n (share of unique n-grams) is easy to read but falls as texts get longer; MTLD
(McCarthy & Jarvis 2010) is the length-robust companion: the mean length of word runs that
keep a type-token ratio above 0.72, read forwards and backwards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9']+")
MTLD_THRESHOLD = 0.72
MTLD_MIN_WORDS = 50


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def distinct_n(texts: Sequence[str], n: int) -> float | None:
    grams = [
        tuple(toks[i : i + n]) for toks in map(tokens, texts) for i in range(len(toks) - n + 1)
    ]
    return len(set(grams)) / len(grams) if grams else None


def _mtld_pass(words: Sequence[str]) -> float:
    factors, types, count = 0.0, set(), 0
    for word in words:
        types.add(word)
        count += 1
        if len(types) / count <= MTLD_THRESHOLD:
            factors += 1
            types, count = set(), 0
    if count:  # the partial factor at the end
        ttr = len(types) / count
        factors += (1 - ttr) / (1 - MTLD_THRESHOLD) if ttr < 1 else 0.0
    return len(words) / factors if factors else float(len(words))


def mtld(texts: Sequence[str]) -> float | None:
    words = [w for text in texts for w in tokens(text)]
    if len(words) < MTLD_MIN_WORDS:  # too few words for the measure to mean anything
        return None
    return (_mtld_pass(words) + _mtld_pass(words[::-1])) / 2


def opening_variety(texts: Sequence[str]) -> float | None:
    """Share of distinct first two words across messages (1.0: every message opens differently)."""
    openings = [" ".join(tokens(t)[:2]) for t in texts if tokens(t)]
    return len(set(openings)) / len(openings) if openings else None


def ending_variety(texts: Sequence[str]) -> float | None:
    """How mixed the message endings are (question, exclamation, statement, trailing off)."""
    kinds = []
    for text in texts:
        end = text.rstrip(" \"'”’)")[-1:] or "."
        kinds.append({"?": "question", "!": "exclamation", "…": "trailing"}.get(end, "statement"))
    if not kinds:
        return None
    dominant = max(kinds.count(k) for k in set(kinds))
    return 1 - (dominant - 1) / max(1, len(kinds) - 1) if len(kinds) > 1 else 1.0
