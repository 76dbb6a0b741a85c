"""The features the learned loop check reads: does a candidate continue the loop of the
persona's earlier messages, or move on?

One similarity threshold mistook two things for each other: a loop restated in new words
(similar in meaning, few shared words) and a move on that keeps the loop's subject (many
shared words, something new said). These features tell them apart together: how close the
candidate is to the loop's messages and to their centre, compared with how close those
messages are to each other; and what the candidate adds — the share of its content words the
loop never used, whether it asks, how long it is beside them.
"""

from __future__ import annotations

import re

import numpy as np

FEATURES = (
    "embedding_mean",  # mean cosine to the earlier messages
    "embedding_max",
    "embedding_centre",  # cosine to the earlier messages' mean direction
    "embedding_gap",  # embedding_mean minus the earlier messages' mean pairwise cosine
    "tfidf_mean",
    "tfidf_max",
    "novel_words",  # share of the candidate's content words no earlier message used
    "asks",  # the candidate asks a question
    "length_ratio",  # log of its length over the earlier messages' mean length
)

_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    "a an the and or but so to of in on at for with from by is are was were be been am i you "
    "he she it we they me my your our their this that these those just it's i'm i'll i've "
    "do does did not no yes okay ok right sure well then there here as if about into up "
    "will would can could should have has had get got".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def features(
    earlier: list[str], candidate: str, vectors: np.ndarray, tfidf: np.ndarray | None = None
) -> np.ndarray:
    """The feature vector of ``candidate`` after ``earlier``, given unit ``vectors`` (one row
    per earlier message, then the candidate's) and, where the caller has them, the TF-IDF
    vectors of the same texts fitted on them (computed here otherwise)."""

    window, last = vectors[:-1], vectors[-1]
    sims = window @ last
    centre = window.mean(axis=0)
    norm = float(np.linalg.norm(centre)) or 1.0
    if len(window) > 1:
        pairwise = window @ window.T
        cohesion = float(pairwise[np.triu_indices(len(window), k=1)].mean())
    else:
        cohesion = 1.0
    if tfidf is None:
        from loom_sim.signals.embedding import TfidfBackend

        tfidf = TfidfBackend().vectors([*earlier, candidate])
    tf_sims = tfidf[:-1] @ tfidf[-1]
    used = set().union(*(content_words(t) for t in earlier)) if earlier else set()
    mine = content_words(candidate)
    novel = len(mine - used) / len(mine) if mine else 0.0
    mean_len = max(1.0, float(np.mean([len(t.split()) for t in earlier])))
    return np.array(
        [
            float(sims.mean()),
            float(sims.max()),
            float(centre @ last) / norm,
            float(sims.mean()) - cohesion,
            float(tf_sims.mean()),
            float(tf_sims.max()),
            novel,
            1.0 if "?" in candidate else 0.0,
            float(np.log(max(1, len(candidate.split())) / mean_len)),
        ],
        dtype=np.float64,
    )
