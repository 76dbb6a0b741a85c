"""Whether a persona message makes a revelation: decided by meaning, with its evidence.

The persona is told to reveal "in your own words", so a revelation is rarely said as the
config words it. The monitor decides with the run's embedding service: each sentence of the
message (and each pair of neighbouring sentences, for a revelation said across two) is
compared with every variant of every revelation not made yet; a sentence whose cosine reaches
:data:`SIMILARITY` makes that revelation, and the evidence recorded with the turn says which
variant, which sentence and how close. Without embeddings (the TF-IDF backend, or a model that
could not load) the older word test decides: the message holds at least :data:`SAID_SHARE` of a
variant's words of four letters or more. The measured precision and recall of both are in
docs/signals.md (``benchmarks/validity_loom.py`` on tests/data/validity/loom_revelation.jsonl).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from loom_sim.assembler.revelations import SAID_SHARE, _words
from loom_sim.config.spec import LoomConfig
from loom_sim.messages import RevelationEvidence

if TYPE_CHECKING:
    import numpy as np

#: Cosine (all-MiniLM-L6-v2) of a sentence and a variant at which the sentence says it.
SIMILARITY = 0.55
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def spans(text: str) -> list[str]:
    """The sentences of ``text`` and each pair of neighbouring ones, in order, once each."""
    sentences = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]
    pairs = [" ".join(sentences[i : i + 2]) for i in range(len(sentences) - 1)]
    return list(dict.fromkeys(sentences + pairs))


def variants(config: LoomConfig, skip: Collection[str] = ()) -> list[tuple[str, str, str]]:
    """(topic, variant, text) of every revelation not in ``skip``, in config order."""
    return [
        (revelation.topic, name, text)
        for phase in config.trajectory.phases
        for revelation in phase.revelations
        if revelation.topic not in skip
        for name, text in revelation.variants.available()
    ]


def by_meaning(
    config: LoomConfig,
    text: str,
    sentence_vectors: np.ndarray,
    variant_vectors: np.ndarray,
    skip: Collection[str] = (),
) -> list[RevelationEvidence]:
    """The revelations ``text`` makes, given unit vectors of its :func:`spans` and of the
    :func:`variants` (same order): for each topic its closest sentence and variant."""
    options = variants(config, skip)
    pieces = spans(text)
    if not options or not pieces:
        return []
    sims = sentence_vectors @ variant_vectors.T
    # A sentence is evidence for one revelation at most: the one it is closest to. (A sentence
    # about quitting medication "to think clearly" is near the sleep variant too.)
    closest = {row: options[int(sims[row].argmax())][0] for row in range(len(pieces))}
    best: dict[str, RevelationEvidence] = {}
    for column, (topic, variant, _) in enumerate(options):
        rows = [row for row in range(len(pieces)) if closest[row] == topic]
        if not rows:
            continue
        row = max(rows, key=lambda r: float(sims[r, column]))
        value = float(sims[row, column])
        if value >= SIMILARITY and (topic not in best or value > best[topic].similarity):
            best[topic] = RevelationEvidence(
                topic, variant, round(value, 4), pieces[row], "embedding", SIMILARITY
            )
    return [best[topic] for topic in dict.fromkeys(t for t, _, _ in options) if topic in best]


def by_words(config: LoomConfig, text: str, skip: Collection[str] = ()) -> list[RevelationEvidence]:
    """The fallback without embeddings: a message holding most of a variant's long words."""
    said = _words(text)
    found: dict[str, RevelationEvidence] = {}
    for topic, variant, wording in variants(config, skip):
        wanted = _words(wording)
        share = len(wanted & said) / len(wanted) if wanted else 0.0
        if share >= SAID_SHARE and (topic not in found or share > found[topic].similarity):
            sentence = max(spans(text) or [text], key=lambda s: len(_words(s) & wanted))
            found[topic] = RevelationEvidence(
                topic, variant, round(share, 4), sentence, "words", SAID_SHARE
            )
    return list(found.values())
