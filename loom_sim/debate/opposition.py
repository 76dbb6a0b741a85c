"""The cheap signals computed on every message: do two personas hold opposite stances?

For each message a persona says, and each other persona's latest claim in the window, three
things that cost no model call:

* **similarity** of the two claims (MiniLM embeddings, or TF-IDF): are they about the same
  thing? Two personas saying unrelated things do not disagree, however contrary they sound;
* **sides** (:mod:`~loom_sim.debate.stance`): do the two claims take opposite sides of what
  they share ("does not pay for itself", or "loses money", against "pays for itself"), the
  same side, or share no claim? A message that grants each side its point takes neither
  side against either, however many negations it holds;
* **reply target and contrast**: does the later message answer the earlier one and open or
  argue against it ("No —", "that's wrong", "but")?

``opposition = similarity × contrast`` where similarity is the larger of the two messages'
similarity and the share of words their closest clauses have in common (a claim is a clause:
"The cleanup did not work." against "The cleanup worked downstream. The survey says so." is
one claim disputed, however the rest of the message dilutes it), and contrast is 1.0 for a
contrary reply on opposite sides, 0.8 for opposite sides, 0.6 for contrast words on no
shared claim, 0.2 for none and 0.05 for the same side. ``benchmarks/validity_debate.py``
measures the gate on labelled windows (``tests/data/validity/debate_gate.jsonl``). The detector
model is asked only when some pair in the window reaches the gate, and a pair it names counts
only if its opposition reaches the corroboration threshold: two independent readings must
agree before a room opens, where Faultline trusted one cheap call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loom_sim.debate.messages import PairSignal
from loom_sim.debate.stance import closest
from loom_sim.signals.embedding import Backend

_NEGATION = re.compile(
    r"\b(not|no|never|nobody|nothing|none|neither|nor|without|cannot)\b|n't\b|\bwon'?t\b", re.I
)
_CONTRAST = re.compile(
    r"^\W*(no|nope|wrong|false|nonsense|hardly|but|actually)\b"
    r"|\b(disagree|mistaken|wrong|misses the point|ignores|doesn't hold|that's not)\b",
    re.I,
)

CONTRARY_REPLY = 1.0
OPPOSITE_SIDES = 0.8
CONTRAST_WORDS = 0.6
NO_CONTRAST = 0.2
SAME_SIDE = 0.05


@dataclass(frozen=True)
class Claim:
    """A said message, as the signals see it."""

    id: str
    speaker: str
    text: str
    reply_to: str | None = None

    @property
    def negated(self) -> bool:
        return _NEGATION.search(self.text) is not None

    @property
    def contrary(self) -> bool:
        return _CONTRAST.search(self.text) is not None


def contrast(later: Claim, earlier: Claim) -> tuple[float, str, float]:
    """How contrary ``later`` is to ``earlier``, and how much of a claim their closest clauses
    share. Sides decide before words: "No, the ferry pays" answering "the ferry pays" agrees,
    whatever its "No"."""
    reading = closest(later.text, earlier.text)
    if reading is not None and not reading.opposite:
        return SAME_SIDE, "same_side", reading.overlap
    if reading is not None:
        if later.reply_to == earlier.id and later.contrary:
            return CONTRARY_REPLY, "contrary_reply", reading.overlap
        return OPPOSITE_SIDES, "opposite_sides", reading.overlap
    if later.contrary:
        return CONTRAST_WORDS, "contrast_words", 0.0
    return NO_CONTRAST, "none", 0.0


def similarities(backend: Backend, texts: Sequence[str]) -> np.ndarray:
    """Cosine similarity of every pair of ``texts`` (one backend call: TF-IDF is fitted on
    exactly these texts)."""
    if not texts:
        return np.zeros((0, 0))
    vectors = backend.vectors(list(texts))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    return vectors @ vectors.T


class Similarity:
    """Similarities within a window. An embedding does not depend on the other texts, so each
    message is embedded once and kept; TF-IDF vectors do (IDF is fitted on the window), so
    they are recomputed per window — a dozen short texts, about a millisecond."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._kept: dict[str, np.ndarray] = {}

    def matrix(self, window: Sequence[Claim]) -> np.ndarray:
        if self.backend.name != "embedding":
            return similarities(self.backend, [c.text for c in window])
        missing = [c for c in window if c.id not in self._kept]
        if missing:
            for claim, vector in zip(
                missing, self.backend.vectors([c.text for c in missing]), strict=True
            ):
                self._kept[claim.id] = vector
        if not window:
            return np.zeros((0, 0))
        vectors = np.stack([self._kept[c.id] for c in window])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1.0, norms)
        return vectors @ vectors.T


def signals_for(claim: Claim, window: Sequence[Claim], matrix: np.ndarray) -> list[PairSignal]:
    """``claim`` (the last of ``window``) against each other persona's latest claim before it.
    ``matrix`` holds the similarities of ``window``'s texts, in order."""
    here = len(window) - 1
    latest: dict[str, int] = {}
    for index, other in enumerate(window[:here]):
        if other.speaker != claim.speaker:
            latest[other.speaker] = index
    found = []
    for speaker, index in sorted(latest.items()):
        earlier = window[index]
        factor, why, shared = contrast(claim, earlier)
        similarity = max(0.0, float(matrix[here, index]), shared)
        found.append(
            PairSignal(
                pair=sorted([claim.speaker, speaker]),
                opposition=round(similarity * factor, 4),
                similarity=round(similarity, 4),
                contrast=why,
                messages=[claim.id, earlier.id],
            )
        )
    return found


def strongest(signals: Sequence[PairSignal]) -> dict[tuple[str, str], PairSignal]:
    """Per pair, its strongest signal in a window."""
    best: dict[tuple[str, str], PairSignal] = {}
    for signal in signals:
        key = (signal.pair[0], signal.pair[1])
        if key not in best or signal.opposition > best[key].opposition:
            best[key] = signal
    return best
