"""The debate's checks learned from labelled examples: does a cited message take the side it is
cited for, does a pair of personas oppose each other in a window, and what kind of
disagreement does a crux room argue?

Why: the clause reading of :mod:`~loom_sim.debate.stance` matches words. On citations and
windows nobody wrote it for (paraphrase, "loses money" against "more than covers its crew",
sarcasm, a concession buried mid-message) it found almost none. These checks keep that
reading as one feature among several computed from the run's MiniLM embeddings, and weigh
them with a logistic regression fitted on labelled dev items
(:mod:`loom_sim.signals.learned`, ``scripts/train_checks.py``). Without the embedding model
the clause reading decides alone, as before.

What each check reads, and why:

* **citation** — a message cited for YES or NO on a question: how close it is to the question
  as a whole and at its closest clause (is it about the question?), the clause reading's
  side, the negations of its closest clause and of the whole message (a denial reads close
  to what it denies), and whether it asks. Each signed feature is multiplied by the stance
  (+1 for YES, -1 for NO), so one set of weights reads both.
* **crux type** — a crux room's messages: what kind of disagreement they argue (horizon,
  evidence, values, definition, claim, premise), from the mean of their MiniLM vectors and
  the count of each type's cue words. It reads a card's type a second time, beside the one
  its writer gave, so a reader sees where they differ.
* **pair** — two personas in a window: over every pair of their messages (the later against
  the earlier), the closeness of the messages and of their closest clauses, the opposition
  signal's factor and its reading (opposite sides, same side), whether the later replies to
  the earlier, contrast words, the negation parity of the closest clauses, and whether the
  later asks; the largest and the mean of each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import msgspec
import numpy as np

from loom_sim.debate.crux_type import cue_counts
from loom_sim.debate.messages import PairSignal
from loom_sim.debate.opposition import Claim, contrast
from loom_sim.debate.stance import Side, clauses, flips, side
from loom_sim.signals.embedding import Backend
from loom_sim.signals.learned import UNCERTAIN, LearnedCheck, check, choice

CITATION_FEATURES = (
    "rule_side",  # the clause reading: +1 for, -1 against, 0 neither (times the stance)
    "similarity",  # cosine of the message and the question
    "clause_similarity",  # cosine of the message's closest clause and the question
    "clause_negated",  # the closest clause's negation parity (times the stance)
    "negations",  # the message's negations (times the stance)
    "asks",  # question marks in the message
    "stance",  # +1 YES, -1 NO
)

_PAIR_PARTS = (
    "similarity",
    "clause_similarity",
    "contrast",
    "shared",
    "opposite_sides",
    "same_side",
    "replies",
    "contrary",
    "negation_parity",
    "asks",
)
PAIR_FEATURES = tuple(f"{part}_{how}" for how in ("max", "mean") for part in _PAIR_PARTS)

#: The six types a crux card names, in the order the crux-type check's classes are fitted.
CRUX_TYPES = ("horizon", "evidence", "values", "definition", "claim", "premise")
CRUX_FEATURES = (
    *(f"embedding_{i}" for i in range(384)),  # the mean MiniLM vector of the room's messages
    *(f"cues_{kind}" for kind in CRUX_TYPES),  # the cue words of each type, counted
)


def _parts(text: str) -> list[str]:
    return clauses(text) or [text]


def texts_to_embed(texts: Sequence[str]) -> list[str]:
    """Every text the checks will embed for ``texts``: each, and each of its clauses. A caller
    on an event loop embeds these in a worker thread first; the checks then find them in the
    backend's cache."""
    out: list[str] = []
    for text in texts:
        out += [text, *_parts(text)]
    return list(dict.fromkeys(out))


def _closest(backend: Backend, a: str, b: str) -> tuple[float, str, str]:
    """The cosine of the closest clauses of ``a`` and ``b``, and those clauses."""
    pa, pb = _parts(a), _parts(b)
    sims = backend.vectors(pa) @ backend.vectors(pb).T
    i, j = np.unravel_index(int(np.argmax(sims)), sims.shape)
    return float(sims[i, j]), pa[int(i)], pb[int(j)]


def citation_features(backend: Backend, message: str, question: str, yes: bool) -> np.ndarray:
    sign = 1.0 if yes else -1.0
    found = side(message, question)
    rule = {Side.FOR: 1.0, Side.AGAINST: -1.0}.get(found, 0.0)
    whole, asked = backend.vectors([message, question])
    parts = _parts(message)
    sims = backend.vectors(parts) @ asked
    best = int(np.argmax(sims))
    return np.array(
        [
            rule * sign,
            float(whole @ asked),
            float(sims[best]),
            (flips(parts[best]) % 2) * sign,
            flips(message) * sign,
            float(message.count("?")),
            sign,
        ],
        dtype=np.float64,
    )


@dataclass(frozen=True)
class Verdict:
    """A learned check's answer: positive or not, its probability, and whether it lies so near
    the threshold that a report should call it uncertain."""

    positive: bool
    probability: float
    uncertain: bool
    threshold: float


def _verdict(learned: LearnedCheck, x: np.ndarray) -> Verdict:
    positive, p = learned.decide(x)
    return Verdict(positive, round(p, 4), learned.margin(p) < UNCERTAIN, learned.threshold)


def supports(backend: Backend, message: str, question: str, yes: bool) -> Verdict:
    """Does ``message`` take the side (YES or NO) of ``question`` it is cited for?"""
    return _verdict(check("citation"), citation_features(backend, message, question, yes))


def _pair_row(backend: Backend, later: Claim, earlier: Claim) -> list[float]:
    factor, why, shared = contrast(later, earlier)
    a, b = backend.vectors([later.text, earlier.text])
    nearest, clause_a, clause_b = _closest(backend, later.text, earlier.text)
    return [
        float(a @ b),
        nearest,
        factor,
        shared,
        1.0 if why in ("opposite_sides", "contrary_reply") else 0.0,
        1.0 if why == "same_side" else 0.0,
        1.0 if later.reply_to == earlier.id else 0.0,
        1.0 if later.contrary else 0.0,
        float((flips(clause_a) + flips(clause_b)) % 2),
        1.0 if "?" in later.text else 0.0,
    ]


def pair_features(backend: Backend, window: Sequence[Claim], pair: tuple[str, str]) -> np.ndarray:
    """The features of the two speakers of ``pair`` over ``window`` (in the order said)."""
    rows = [
        _pair_row(backend, later, earlier)
        for j, earlier in enumerate(window)
        for later in window[j + 1 :]
        if {later.speaker, earlier.speaker} == set(pair)
    ] or [[0.0] * len(_PAIR_PARTS)]
    table = np.array(rows, dtype=np.float64)
    return np.concatenate([table.max(axis=0), table.mean(axis=0)])


def opposed_pairs(backend: Backend, window: Sequence[Claim]) -> dict[tuple[str, str], Verdict]:
    """Each pair of speakers in ``window``: do they oppose each other?"""
    learned = check("pair")
    speakers = sorted({claim.speaker for claim in window})
    return {
        (a, b): _verdict(learned, pair_features(backend, window, (a, b)))
        for a, b in combinations(speakers, 2)
    }


def with_readings(
    backend: Backend, window: Sequence[Claim], best: dict[tuple[str, str], PairSignal]
) -> dict[tuple[str, str], PairSignal]:
    """Each pair's signal with the learned check's reading of ``window`` beside it (its
    probability, verdict, and whether it lies near the threshold). Only with MiniLM: the
    features are embeddings, so a TF-IDF backend leaves the word signal alone."""
    if backend.name != "embedding" or not best:
        return best
    readings = opposed_pairs(backend, window)
    out = {}
    for key, signal in best.items():
        verdict = readings.get(key)
        out[key] = (
            signal
            if verdict is None
            else msgspec.structs.replace(
                signal,
                learned=verdict.probability,
                opposed=verdict.positive,
                uncertain=verdict.uncertain,
            )
        )
    return out


def crux_features(backend: Backend, texts: Sequence[str]) -> np.ndarray:
    counts = cue_counts(texts)
    mean = backend.vectors(list(texts)).mean(axis=0) if texts else np.zeros(384)
    return np.concatenate([mean, [float(counts[kind]) for kind in CRUX_TYPES]])


@dataclass(frozen=True)
class TypeReading:
    """The crux-type check's reading of a room: its type, probability, and whether the runner-
    up lies within :data:`~loom_sim.signals.learned.UNCERTAIN` of it."""

    type: str
    probability: float
    uncertain: bool


def read_crux_type(backend: Backend, texts: Sequence[str]) -> TypeReading:
    kind, p, uncertain = choice("crux_type").decide(crux_features(backend, texts))
    return TypeReading(kind, round(p, 4), uncertain)
