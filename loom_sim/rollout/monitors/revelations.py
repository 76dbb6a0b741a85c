"""Whether a persona message makes a revelation: decided by meaning, with its evidence.

The persona is told to reveal "in your own words", so a revelation is rarely said as the
config words it. The monitor decides with the run's embedding service: each sentence of the
message (and each pair of neighbouring sentences, for a revelation said across two) is
compared with every variant of every revelation not made yet, and goes to the revelation it is
closest to. Naming what a variant names is not saying it ("I slept well", "we had a meeting
about commit conventions" share a word with a variant and are near it for that word alone), so
the cosine is discounted for the words the two share: they are taken out of both, the rest is
compared again, and the score is the mean of the cosine and that remainder's (never above the
cosine). A sentence whose score reaches :data:`SIMILARITY` makes that revelation, and the
evidence recorded with the turn says which variant, which sentence, the cosine, the words
shared and the score. Without embeddings (the TF-IDF backend, or a model that could not load)
the older word test decides: the message holds at least :data:`SAID_SHARE` of a variant's words
of four letters or more. The measured precision and recall of both are in docs/signals.md
(``benchmarks/validity_loom.py`` on tests/data/validity/loom_revelation.jsonl).

The decision is one generator (:func:`by_meaning`) that asks for the vectors it needs and gets
them sent in, so the monitor (asking the embedding service) and the benchmark (asking the model
directly) run the same code: :func:`decide` drives it with a plain function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Generator
from typing import TYPE_CHECKING

from loom_sim.assembler.revelations import SAID_SHARE, _words
from loom_sim.config.spec import LoomConfig
from loom_sim.store.turn_parts import RevelationEvidence

if TYPE_CHECKING:
    import numpy as np

#: Score (all-MiniLM-L6-v2 cosine, discounted for shared words) at which a sentence says a
#: variant. Set on the labelled set alone (tests/data/validity/loom_revelation.jsonl), at the
#: highest bar that finds 0.90 of its revelations; docs/signals.md shows what that costs on the
#: held-out set.
SIMILARITY = 0.43
#: Cosine of two single words at which a sentence counts as sharing the variant's word (slept
#: and sleeping, commit and commits, psychiatrist and doctor): what the discount takes out.
#: The shared words still count for half (the mean): "I haven't slept since Tuesday" shares
#: its topic's word and says it.
SAME_WORD = 0.55
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]+")

#: What :func:`by_meaning` yields (texts to embed) and is sent back (their unit vectors).
Asking = Generator[list[str], "np.ndarray", list[RevelationEvidence]]


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


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its content (four letters or more, not a stop word),
    lower-cased, once each."""
    from loom_sim.signals.analysis import content_words as words

    return list(dict.fromkeys(words(text)))


def without(text: str, words: Collection[str]) -> str:
    """``text`` with ``words`` (lower-cased content words) taken out."""
    kept = _TOKEN.sub(lambda m: "" if m[0].lower().replace("’", "'") in words else m[0], text)
    return " ".join(kept.split()) or "."


def by_meaning(config: LoomConfig, text: str, skip: Collection[str] = ()) -> Asking:
    """The revelations ``text`` makes, for each topic its best sentence and variant; yields the
    texts whose unit vectors it needs (at most three times: the sentences and variants; then,
    if a sentence is near a variant, the words of both; then the two without the shared ones)."""
    options = variants(config, skip)
    pieces = spans(text)
    if not options or not pieces:
        return []
    vectors = yield [*pieces, *(w for _, _, w in options)]
    sims = vectors[: len(pieces)] @ vectors[len(pieces) :].T
    # A sentence is evidence for one revelation at most: the one it is closest to. (A sentence
    # about quitting medication "to think clearly" is near the sleep variant too.) The score is
    # never above the cosine, so only pairs whose cosine reaches the bar are scored.
    near = [
        (row, column)
        for row in range(len(pieces))
        for column in range(len(options))
        if options[column][0] == options[int(sims[row].argmax())][0]
        and sims[row, column] >= SIMILARITY
    ]
    if not near:
        return []
    words = {("said", i): content_words(pieces[i]) for i, _ in near}
    words |= {("meant", j): content_words(options[j][2]) for _, j in near}
    vocabulary = list(dict.fromkeys(w for ws in words.values() for w in ws))
    word_vectors = (yield vocabulary) if vocabulary else None
    index = {w: i for i, w in enumerate(vocabulary)}
    shared: dict[tuple[int, int], tuple[list[str], list[str]]] = {}
    remainders: list[str] = []
    for row, column in near:
        said, meant = words["said", row], words["meant", column]
        if word_vectors is None or not said or not meant:
            continue
        close = word_vectors[[index[w] for w in said]] @ word_vectors[[index[w] for w in meant]].T
        mine = [w for i, w in enumerate(said) if close[i].max() >= SAME_WORD]
        theirs = [w for k, w in enumerate(meant) if close[:, k].max() >= SAME_WORD]
        if mine:
            shared[row, column] = (mine, theirs)
            remainders += [without(pieces[row], mine), without(options[column][2], theirs)]
    rest = (yield remainders) if remainders else None
    best: dict[str, RevelationEvidence] = {}
    at = 0
    for row, column in near:
        topic, variant, _ = options[column]
        cosine = float(sims[row, column])
        common = shared.get((row, column), ([], []))[0]
        score = cosine
        if common and rest is not None:
            remainder = float(rest[at] @ rest[at + 1])
            at += 2
            score = (cosine + min(cosine, remainder)) / 2
        if score >= SIMILARITY and (topic not in best or score > best[topic].similarity):
            best[topic] = RevelationEvidence(
                topic,
                variant,
                round(score, 4),
                pieces[row],
                "embedding",
                SIMILARITY,
                cosine=round(cosine, 4),
                shared=tuple(dict.fromkeys(common)),
            )
    return [best[topic] for topic in dict.fromkeys(t for t, _, _ in options) if topic in best]


def decide(asking: Asking, vectors: Callable[[list[str]], np.ndarray]) -> list[RevelationEvidence]:
    """Run :func:`by_meaning` with ``vectors`` (texts to unit vectors) answering it."""
    try:
        texts = next(asking)
        while True:
            texts = asking.send(vectors(texts))
    except StopIteration as done:
        return done.value


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
