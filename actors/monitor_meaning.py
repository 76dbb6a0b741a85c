"""What the monitor decides by meaning, with the run's embedding service: which revelations a
committed message makes (and, where the config asks, the judge's confirmation of each), and
whether a candidate gives in in words no phrase lists.

Kept apart from the monitor's loop so that each decision is one function over its inputs:
the embedder to ask (None: the word fallback), the config, the text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import msgspec
from loom_sim.actors.base import JudgeLine

from loom_sim.config.spec import LoomConfig
from loom_sim.judging.rubrics import TRIGGER_SCHEMA, trigger_rubric
from loom_sim.messages import Embed, Judge, Observe, RevelationEvidence, WindowTurn
from loom_sim.models.base import Usage
from loom_sim.monitors import concession, revelations
from loom_sim.monitors.repetition import Finding

if TYPE_CHECKING:  # numpy and the embedder load only when a rollout runs
    from loom_sim.actors.embedder import Embedder


async def revealed(
    config: LoomConfig, embedder: Embedder | None, text: str, made: Collection[str]
) -> list[RevelationEvidence]:
    """The revelations ``text`` makes that are not in ``made``: by meaning with the embedding
    service (:func:`revelations.by_meaning`: the sentences and the variants in one request, the
    variants' vectors cached after the first; a second and third only when a sentence is near
    a variant), else by the word test."""
    if embedder is not None and revelations.variants(config, made):
        asking = revelations.by_meaning(config, text, made)
        try:
            texts = next(asking)
            while True:
                got = await embedder.request(Embed(texts=texts))
                if got.vectors is None:
                    break  # the model could not be loaded: the word test decides
                import numpy as np

                texts = asking.send(np.asarray(got.vectors))
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


async def gave_in(embedder: Embedder, phrases: Sequence[str], text: str) -> list[Finding]:
    """Capitulation by meaning (:mod:`loom_sim.monitors.concession`): the clauses of ``text``
    close to a listed phrase or a plain concession."""
    pieces = concession.clauses(text)
    if not pieces:
        return []
    references = concession.exemplars(phrases)
    got = await embedder.request(Embed(texts=[*pieces, *references]))
    if got.vectors is None:
        return []
    import numpy as np

    vectors = np.asarray(got.vectors)
    return concession.by_meaning(pieces, vectors[: len(pieces)], references, vectors[len(pieces) :])
