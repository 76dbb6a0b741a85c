"""What a rollout's monitors share: the vectors of the turn in progress, the judge, and the
revelations made and offered so far.

Built once per rollout by the monitor actor and handed to every monitor
(:meth:`~loom_sim.rollout.monitors.base.Monitor.attach`). Two built-in monitors meet here: the
revelations monitor marks what the persona's messages reveal, and the stagnation monitor offers
the next unused revelation in its redirects; both read and write one :class:`RevelationLedger`,
so a revelation made is never offered, and one offered is not offered again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from loom_sim.assembler.revelations import RevelationTracker
from loom_sim.messages import Embed

if TYPE_CHECKING:  # numpy and the embedder load only when a rollout runs
    import numpy as np

    from loom_sim.actors.base import JudgeLine
    from loom_sim.actors.embedder import Embedder
    from loom_sim.config.spec import LoomConfig
    from loom_sim.store.records import TurnRecord

__all__ = ["HeldVectors", "MonitorContext", "RevelationLedger"]


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


class RevelationLedger:
    """The revelations the persona has made (by the evidence), and those used: made, or
    offered by a redirect. Rebuilt on resume from the completed turns' records."""

    def __init__(self, config: LoomConfig, records: Sequence[TurnRecord] = ()):
        self.config = config
        self.tracker = RevelationTracker(config)
        self.made: set[str] = set()
        for record in records:
            for topic in record.revealed:
                self.mark_made(topic)
            # A revelation is used the moment a redirect offers it: on the re-prompt that
            # carries the redirect (`vary`), or, with no retry left to ride on, in the next
            # turn's `emergency`, which the turn that fired records as pending. A run killed
            # in between has only the pending one.
            for sent in (record.emergency, record.vary, record.pending_emergency):
                if sent:
                    self.mark_offered_in(sent)
            for topic in record.offered_by_redirect:
                self.tracker.mark_used(topic)

    def mark_made(self, topic: str) -> None:
        self.made.add(topic)
        self.tracker.mark_used(topic)  # never offered again

    def mark_offered_in(self, text: str) -> None:
        """Every revelation whose wording ``text`` quotes is used."""
        for phase in self.config.trajectory.phases:
            for revelation in phase.revelations:
                if any(wording in text for _, wording in revelation.variants.available()):
                    self.tracker.mark_used(revelation.topic)


class MonitorContext:
    """One rollout's shared monitor context (see the module's docstring)."""

    def __init__(
        self,
        config: LoomConfig,
        *,
        records: Sequence[TurnRecord] = (),
        turns: int | None = None,
        embedder: Embedder | None = None,
        judge: JudgeLine | None = None,
    ):
        from loom_sim.config.spec import EmbeddingBackend

        self.config = config
        self.turns = turns  # the rollout's planned turns (None: unknown)
        # The config's similarity backend decides for every monitor: with TF-IDF, nothing is
        # decided by embeddings (and the service is not asked).
        backend = config.interaction.stagnation_detection.backend
        self.embedder = embedder if backend is EmbeddingBackend.EMBEDDING else None
        # the judge confirms a revelation found by meaning, where the config asks for it
        self.judge = judge if config.interaction.revelation_judge else None
        self.revelations = RevelationLedger(config, records)
        self.vectors: HeldVectors | None = None

    def hold(self, lasting: list[str]) -> None:
        """Start holding vectors, once every monitor has said what it needs for the whole
        rollout (the config's own texts)."""
        if self.embedder is not None:
            self.vectors = HeldVectors(self.embedder, lasting)

    @property
    def live_vectors(self) -> HeldVectors | None:
        """The vectors to ask, while the embedding service can give them (else None)."""
        return self.vectors if self.embedder is not None else None

    def embedder_lost(self) -> None:
        """The embedding model could not be loaded: every monitor falls back from now on."""
        self.embedder = None

    def end_turn(self) -> None:
        if self.vectors is not None:
            self.vectors.end_turn()
