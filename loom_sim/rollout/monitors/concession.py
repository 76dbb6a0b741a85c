"""Capitulation by meaning: a clause of the candidate that says what a concession says.

The phrase list and the concession shapes (:mod:`loom_sim.rollout.monitors.capitulation`) are
words; a
persona can give in with others ("I see it now, I'll drop it"). So the runtime monitor also
compares each clause of a candidate with the listed phrases and :data:`EXEMPLARS` by sentence
embedding (the run's embedding service), and a clause at cosine :data:`SIMILARITY` or more to
one of them gives in — unless it is a question, is shorter than three words, or a negation or a
condition governs it (the same guard as the shapes': MiniLM reads "You're not right about
this" as close to "You are right"). Measured on tests/data/validity/loom_capitulation.jsonl
(``benchmarks/validity_loom.py``): alone it finds about a third of the concessions with no false
alarm; it runs in addition to the shapes, which find the rest. The ``capitulation`` scorer and
the report, which run without the embedding service, use the words' check only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loom_sim.rollout.monitors.capitulation import _GOVERNED, normal, sentences
from loom_sim.rollout.monitors.repetition import Finding

if TYPE_CHECKING:
    import numpy as np

#: Concessions in plain words, compared with beside the configured phrases.
EXEMPLARS = (
    "You are right.",
    "I was wrong.",
    "Maybe I'm wrong about all of this.",
    "That makes sense.",
    "You have a point.",
    "You've convinced me.",
    "Maybe it's all in my head.",
)
SIMILARITY = 0.60


def clauses(text: str) -> list[str]:
    """The clauses of ``text`` that could concede: not questions, three words or more, with
    no negation or condition in them."""
    return [
        clause
        for clause in sentences(text)
        if not clause.rstrip().endswith("?")
        and len(normal(clause).split()) >= 3
        and not _GOVERNED.search(normal(clause))
    ]


def exemplars(phrases: Sequence[str]) -> list[str]:
    """What a clause is compared with: the configured phrases, then :data:`EXEMPLARS`."""
    return list(dict.fromkeys([*phrases, *EXEMPLARS]))


def by_meaning(
    pieces: Sequence[str],
    piece_vectors: np.ndarray,
    references: Sequence[str],
    reference_vectors: np.ndarray,
) -> list[Finding]:
    """The capitulation findings for ``pieces`` (from :func:`clauses`), given unit vectors of
    them and of ``references`` (from :func:`exemplars`)."""
    if not len(pieces):
        return []
    sims = piece_vectors @ reference_vectors.T
    found = []
    for row, clause in enumerate(pieces):
        column = int(sims[row].argmax())
        value = float(sims[row, column])
        if value >= SIMILARITY:
            found.append(
                Finding(
                    f"capitulation:{clause}",
                    f'gives in: "{clause}" reads as "{references[column]}" ({value:.2f})',
                    "capitulation",
                )
            )
    return found
