"""Running a planned run: its rollouts as cells, taken in order by ``concurrency`` workers in
one nursery, with the run's services (the embedding service, in-process models loading) and
the cyclic collector set for hundreds of rollouts. A matrix run and a cluster's workers run
cells too.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import trio

from loom_sim.models.hub import ModelHub
from loom_sim.plugins.actors import ACTORS
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.runtime.rollout import ModelSource, Rollout
from loom_sim.rollout.runtime.run import RunPlan
from loom_sim.rollout.runtime.startup import rollout_models, run_services
from loom_sim.store.records import Transcript


def hub_models(hub: ModelHub) -> ModelSource:
    return lambda spec, index, role: hub.client(spec, rollout_index=index, role=role)


@dataclass(frozen=True)
class Cell:
    """One rollout of a planned run: the unit a run's nursery runs (and a scheduler could hand
    out). ``label`` names it in progress lines; ``position`` is its place in the run's order,
    which also spreads cells over the hub's connection pools."""

    plan: RunPlan
    index: int
    label: str
    position: int


def plan_cells(plan: RunPlan) -> list[Cell]:
    """The run's rollouts as cells; a shard's (``--shard k/N``) only its own."""
    shard = plan.record.shard
    return [
        Cell(plan, index, plan.rollout_spec(index).id, index)
        for index in range(plan.record.rollouts)
        if shard is None or shard.owns(index)
    ]


async def execute(
    plan: RunPlan,
    hub: ModelHub,
    progress: ProgressSink,
    models: ModelSource | None = None,
) -> list[Transcript]:
    """Run every rollout of the plan (skipping finished ones); return their transcripts.
    ``models`` replaces the hub as the source of model clients (tests' fakes)."""
    record = plan.record
    budget = RunBudget(record.budgets.max_cost_usd, record.budgets.max_runtime_s)
    return await run_cells(
        plan_cells(plan), hub, progress, budget, record.concurrency, models=models
    )


#: The cyclic collector's thresholds while rollouts run (Python's: 700, 10, 10).
RUN_GC_THRESHOLD = (100_000, 10, 10)


async def run_cells(
    cells: list[Cell],
    hub: ModelHub,
    progress: ProgressSink,
    budget: RunBudget,
    concurrency: int,
    models: ModelSource | None = None,
) -> list[Transcript]:
    """Run the cells (a finished one is read back, not run again), at most ``concurrency`` at
    once, sharing ``budget``; their transcripts in the cells' order. The hub is closed at the
    end, whatever happens.

    ``concurrency`` workers take the cells one after the other from one iterator, so cells
    start in their order — trio schedules waiting tasks in no promised order, and a budget
    that runs out must have spent itself on the first cells, not on whichever woke first."""
    source = models or hub_models(hub)
    # The actor kinds a rollout spawns are imported before the first rollout starts, as a
    # one-process run's config checks import them: a worker process of the ``processes``
    # executor first read the registry from its first rollout, and the imports (150 ms of CPU)
    # held all of its rollouts' first turns; imported now, they are frozen with the rest.
    ACTORS.load()
    # What exists now (modules, configs, plans) lives as long as the run: moved out of the
    # cyclic collector's way, a full collection — which runs on the event loop, inside some
    # task's step — scans only what the rollouts make (measured: the longest loop stall at
    # 64 rollouts fell from about 55 to 14 ms of CPU). Garbage is collected first, or it
    # would be frozen with the rest and never freed (in a worker thread: no task waits on
    # the loop yet, and none is held while it scans); and the run unfreezes at its end, so a
    # process that runs many (a test session, a benchmark, the web viewer) does not keep
    # every run's leftovers (measured: peak RSS at 256 rollouts, 175 -> 104 MiB).
    await trio.to_thread.run_sync(gc.collect)
    gc.freeze()
    # And the young generations are collected less often: with hundreds of rollouts alive,
    # every pass that reaches the old generation holds the loop for tens of milliseconds
    # (measured at 256 rollouts, monitors as shipped: the longest stall 87 -> 27 ms, the
    # efficiency 0.43 -> 0.53; at 64, 6.8 -> 4.4 ms). A young collection scans every object
    # still alive since the last one, and hundreds of rollouts waiting on their replies keep
    # tens of thousands alive, so it costs about that whatever the threshold: a threshold
    # of 100,000, not 10,000, cut the collector's CPU in each of two workers running 512
    # rollouts from about 0.4 s to 0.15 s of the 4.5 s they spent; the longest stall's CPU
    # at 64 rollouts stayed at 3 ms, at 256 19 against 22 ms.
    threshold = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLD)
    try:
        return await _run_cells(cells, hub, progress, budget, concurrency, source, models is None)
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


async def _run_cells(
    cells: list[Cell],
    hub: ModelHub,
    progress: ProgressSink,
    budget: RunBudget,
    concurrency: int,
    source: ModelSource,
    preload_models: bool,
) -> list[Transcript]:
    results: dict[int, Transcript] = {}
    queue = iter(enumerate(cells))

    async def one(k: int, cell: Cell) -> None:
        spec = cell.plan.rollout_spec(cell.index)
        finished = spec.files.transcript()
        if finished is not None and finished.status == "done":
            results[k] = finished
            return
        sink = progress if cell.label == spec.id else _Labelled(progress, cell.label)
        position = cell.position

        def placed(model: str, index: int, role: str):
            return source(model, position, role)

        results[k] = await Rollout(spec, placed, budget, sink, embedder=shared).run()

    async def worker() -> None:
        for k, cell in queue:  # one iterator for every worker: the next cell in order
            await one(k, cell)

    # The run's services (the embedding service, in-process models loading) start first,
    # overlapping the first turns' network waits; every cell shares them.
    configs = list({id(c.plan): c.plan.config for c in cells}.values())
    preload: dict[tuple[str, str], None] = {}  # (role, spec), each once, in the cells' order
    if preload_models:  # (a cluster's workers are handed their models, loaded by them)
        for plan in {id(c.plan): c.plan for c in cells}.values():
            preload.update(dict.fromkeys(preloaded(plan).items()))
    try:
        async with (
            run_services(configs, hub, list(preload)) as shared,
            trio.open_nursery() as nursery,
        ):
            for n in range(max(1, min(concurrency, len(cells)))):
                nursery.start_soon(worker, name=f"cell worker {n}")
    finally:
        with trio.CancelScope(shield=True):
            await hub.aclose()
    return [results[k] for k in sorted(results)]


class _Labelled:
    """A progress sink that names a rollout by its cell (``arm/rollout_000`` in a matrix,
    where every arm has a ``rollout_000``)."""

    def __init__(self, sink: ProgressSink, label: str):
        self._sink, self._label = sink, label

    def rollout_started(self, rollout: str, turns: int, done: int) -> None:
        self._sink.rollout_started(self._label, turns, done)

    def turn_done(self, rollout, turn, phase, tokens, cost, elapsed) -> None:
        self._sink.turn_done(self._label, turn, phase, tokens, cost, elapsed)

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None:
        self._sink.rollout_ended(self._label, status, detail)


def preloaded(plan: RunPlan) -> dict[str, str]:
    """The in-process models the run loads at start-up: those its rollouts call."""
    return rollout_models(plan.config, plan.models, plan.record.responders)
