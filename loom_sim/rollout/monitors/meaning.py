"""What the monitors decide by meaning, with the run's embedding service: which revelations a
committed message makes (and, where the config asks, the judge's confirmation of each), and
whether a candidate gives in in words no phrase lists.

Each decision is one function over its inputs: the vectors to ask (None: the word fallback),
the config, the text. The vectors come through
:class:`~loom_sim.rollout.monitors.context.HeldVectors`, which holds what the
monitors were sent for the turn in progress: the check of a candidate asks once for everything
every monitor's check and the observation after it will compare (each monitor's
:meth:`~loom_sim.rollout.monitors.base.Monitor.wants`), since each request to the embedding
service costs a batching window and a model call whatever it holds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TYPE_CHECKING

import msgspec

from loom_sim.config.spec import LoomConfig
from loom_sim.judging.rubrics import TRIGGER_SCHEMA, trigger_rubric
from loom_sim.messages import Judge, WindowTurn
from loom_sim.models.base import Usage
from loom_sim.rollout.messages import Observe
from loom_sim.rollout.monitors import concession, revelations
from loom_sim.rollout.monitors.base import Finding
from loom_sim.store.turn_parts import RevelationEvidence

if TYPE_CHECKING:  # numpy, trio and the embedder load only when a rollout runs
    import numpy as np

    from loom_sim.actors.base import JudgeLine

#: Unit vectors of texts, in order; None when the embedding model could not be loaded.
Vectors = Callable[[list[str]], Awaitable["np.ndarray | None"]]


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
