"""What a run loads before its turns need it: the embedding model and the in-process models.

Loading MiniLM or a GGUF model takes a second or more. Done lazily, that second lands inside
some rollout's turn (its first stagnation check, its first judge call), in the middle of the
conversation's timing. So a run starts both loads at once, each in a worker thread, while its
rollouts make their first model calls, and says once how long each took. The embedding model
is loaded by the run's embedding service (one for all rollouts, :mod:`loom_sim.actors.embedder`),
which this also starts and stops.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

import trio

from loom_sim.actors import embedder
from loom_sim.actors.embedder import Embedder, ServiceStats, needs_embeddings
from loom_sim.config import LoomConfig
from loom_sim.config.spec import TriggerEnd
from loom_sim.models.hub import ModelHub
from loom_sim.plugins.actors import ACTORS, Responder

_NONE = Responder(model_role="")

log = logging.getLogger("loom_sim.rollout.runtime")


@asynccontextmanager
async def run_services(
    configs: list[LoomConfig],
    hub: ModelHub,
    models: Mapping[str, str] | Iterable[tuple[str, str]],
) -> AsyncIterator[Embedder | None]:
    """The run's shared services for the body of the block: the embedding service when any
    rollout's monitor compares embeddings (else None), and the in-process models of
    ``models`` (role -> spec) loading in the background. Both stop when the block ends."""
    async with trio.open_nursery() as nursery:
        pairs = list(models.items() if isinstance(models, Mapping) else models)
        nursery.start_soon(_preload, hub, pairs)
        try:
            if any(needs_embeddings(config) for config in configs):
                async with embedder.running(on_loaded=_said) as service:
                    yield service
            else:
                yield None
        finally:
            nursery.cancel_scope.cancel()  # a model still loading for nothing: stop waiting


def rollout_models(
    config: LoomConfig, models: Mapping[str, str], responders: list[str]
) -> dict[str, str]:
    """The models (role -> spec) a run's rollouts call: not the judge unless a phase ends on a
    judged condition or an adversary (which asks the judge for its verdicts) answers. Loading
    a model nobody calls would cost its memory for nothing (scoring loads its judge itself)."""
    kinds = [ACTORS.get(name).responder or _NONE for name in responders if name in ACTORS]
    adversary = any(kind.adversary for kind in kinds)
    judged = adversary or any(
        isinstance(phase.end_condition, TriggerEnd) for phase in config.trajectory.phases
    )
    return {role: spec for role, spec in models.items() if role != "judge" or judged}


async def _preload(hub: ModelHub, models: list[tuple[str, str]]) -> None:
    for role, spec, seconds in await hub.preload(models):
        log.info("loaded %s (%s) in %.1f s", spec, role, seconds)


def _said(stats: ServiceStats) -> None:
    if stats.backend == "embedding":
        log.info("loaded the embedding model (all-MiniLM-L6-v2) in %.1f s", stats.load_s or 0.0)
