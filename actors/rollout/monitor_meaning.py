"""What the monitor decides by meaning, with the run's embedding service: which revelations a
committed message makes (and, where the config asks, the judge's confirmation of each), and
whether a candidate gives in in words no phrase lists.

Kept apart from the monitor's loop so that each decision is one function over its inputs:
the vectors to ask (None: the word fallback), the config, the text. The vectors come through
:class:`HeldVectors`, which holds what the monitor was sent for the turn in progress: the
check of a candidate asks once for everything it and the observation after it will compare
(the window's texts, the candidate's clauses and sentences), since each request to the
embedding service costs a batching window and a model call whatever it holds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec
from loom_sim.actors.base import JudgeLine

from loom_sim.config.spec import LoomConfig
from loom_sim.judging.rubrics import TRIGGER_SCHEMA, trigger_rubric
from loom_sim.messages import Embed, Judge, Observe, RevelationEvidence, WindowTurn
from loom_sim.models.base import Usage
from loom_sim.rollout.monitors import concession, revelations
from loom_sim.rollout.monitors.repetition import Finding

if TYPE_CHECKING:  # numpy and the embedder load only when a rollout runs
    import numpy as np
    from loom_sim.actors.embedder import Embedder

#: Unit vectors of texts, in order; None when the embedding model could not be loaded.
Vectors = Callable[[list[str]], Awaitable["np.ndarray | None"]]


class HeldVectors:
    """The vectors a monitor holds: the turn in progress's (dropped at :meth:`end_turn`) and
    the config's own texts (variants, capitulation references: for the whole rollout). Asked
    for texts, it requests only those it does not hold, in one request."""

    def __init__(self, embedder: Embedder, lasting: Iterable[str] = ()):
        self._embedder = embedder
        self._lasting = set(lasting)
        self._held: dict[str, np.ndarray] = {}
        self.failed = False  # the model could not be loaded: every answer is None from now on

    async def __call__(self, texts: list[str]) -> np.ndarray | None:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._held]
        if missing and not self.failed:
            got = await self._embedder.request(Embed(texts=missing))
            if got.vectors is None:
                self.failed = True
            else:
                self._held.update(zip(missing, got.vectors, strict=True))
        if self.failed:
            return None
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._held[t] for t in texts])

    @property
    def held(self) -> Mapping[str, np.ndarray]:
        return self._held

    def end_turn(self) -> None:
        self._held = {t: v for t, v in self._held.items() if t in self._lasting}


def revelation_texts(config: LoomConfig, text: str, made: Collection[str]) -> list[str]:
    """What :func:`revealed` first asks vectors for: the sentences of ``text`` and the variants
    of the revelations not ``made`` (nothing when none is left)."""
    options = revelations.variants(config, made)
    pieces = revelations.spans(text)
    return [*pieces, *(w for _, _, w in options)] if options and pieces else []


def capitulation_texts(phrases: Sequence[str], text: str) -> list[str]:
    """What :func:`gave_in` asks vectors for: the clauses of ``text`` and the references."""
    pieces = concession.clauses(text)
    return [*pieces, *concession.exemplars(phrases)] if pieces else []


async def revealed(
    config: LoomConfig, vectors: Vectors | None, text: str, made: Collection[str]
) -> list[RevelationEvidence]:
    """The revelations ``text`` makes that are not in ``made``: by meaning with ``vectors``
    (:func:`revelations.by_meaning`: the sentences and the variants first; the words and the
    remainders only when a sentence is near a variant), else by the word test."""
    if vectors is not None and revelations.variants(config, made):
        asking = revelations.by_meaning(config, text, made)
        try:
            texts = next(asking)
            while True:
                got = await vectors(texts)
                if got is None:
                    break  # the model could not be loaded: the word test decides
                texts = asking.send(got)
        except StopIteration as done:
            return done.value
    return revelations.by_words(config, text, made)


async def confirmed(
    config: LoomConfig, judge: JudgeLine | None, exchange: Observe, found: list[RevelationEvidence]
) -> tuple[list[RevelationEvidence], Usage]:
    """The revelations the judge confirms (all of them, when none is asked): one call each,
    over the exchange, quoting the deciding words; and what the calls used."""
    usage = Usage()
    if judge is None or not found:
        return found, usage
    window = [WindowTurn(exchange.turn, exchange.persona, exchange.interlocutor)]
    wordings = {(t, v): w for t, v, w in revelations.variants(config)}
    kept = []
    for evidence in found:
        wording = wordings[(evidence.topic, evidence.variant)]
        judgement = await judge(
            Judge(
                turn=exchange.turn,
                rubric=trigger_rubric(
                    f"the persona's last message says this, in any words: {wording}"
                ),
                window=window,
                schema=TRIGGER_SCHEMA,
                rubric_id="revelation",
            )
        )
        usage = usage + judgement.usage
        parsed = judgement.parsed if isinstance(judgement.parsed, dict) else {}
        if judgement.ok and parsed.get("met") is True:
            quote = str(parsed.get("evidence") or "")
            kept.append(msgspec.structs.replace(evidence, judge=quote))
    return kept, usage


async def gave_in(vectors: Vectors, phrases: Sequence[str], text: str) -> list[Finding]:
    """Capitulation by meaning (:mod:`loom_sim.rollout.monitors.concession`): the
    clauses of ``text`` close to a listed phrase or a plain concession."""
    pieces = concession.clauses(text)
    if not pieces:
        return []
    references = concession.exemplars(phrases)
    got = await vectors([*pieces, *references])
    if got is None:
        return []
    return concession.by_meaning(pieces, got[: len(pieces)], references, got[len(pieces) :])
