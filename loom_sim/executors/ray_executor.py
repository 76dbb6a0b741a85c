"""The Ray executor's driver: hands out units of work as Ray tasks and gathers what they did.

The driver is the ``loom-sim`` process. It plans and reports exactly as the local executor's
run does; in between it joins a cluster (``--address``) or starts a Ray on this machine, puts
the run's two small actors on its own node (the :class:`Coordinator` and the
:class:`ProviderLimits`: they live and die with the driver), and keeps at most
``--concurrency`` units in flight. Each unit is one Ray task (:mod:`.worker`): Ray places it,
and re-runs it (up to :data:`RETRIES` times) when its worker or node is lost; the unit resumes
from its files, so a retry repeats at most the turn that was in flight.

Why tasks and not actors: Ray's async actors run asyncio, loom-sim runs trio; a task that
calls ``trio.run`` keeps every unit of work exactly the code the local executor runs, and a
task is what Ray knows how to retry on another node.

While units run, the driver drains the coordinator's progress events into the one live
table every quarter second. When the pass ends it appends an
:class:`~loom_sim.store.distribution.Execution` to ``run.json``: where it ran, which cells
were retried and how often, which were lost.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio

from loom_sim.core.header import redact_url
from loom_sim.errors import LoomError
from loom_sim.executors.base import CellBatch, ExecutorSettings, ScoreBatch, executor
from loom_sim.executors.coordinator import Coordinator, Event
from loom_sim.executors.limiter import ProviderLimits
from loom_sim.executors.ray_support import import_ray, wait_for
from loom_sim.executors.worker import (
    CellJob,
    CellOutcome,
    CellPass,
    ScoreJob,
    ScorePass,
    holder,
    run_cell,
    score_cell,
)
from loom_sim.models.providers import PROVIDERS
from loom_sim.rollout.runtime.cells import Cell
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.runtime.run import hub_for
from loom_sim.rollout.scoring.engine import ScoreSummary
from loom_sim.store.artifacts import rollout_dir
from loom_sim.store.distribution import Execution
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import add_execution, read_run

__all__ = ["API_CELL_CPUS", "LOCAL_OBJECT_STORE_BYTES", "RETRIES", "RayExecutor"]

RETRIES = 3  # times Ray runs a unit again after losing its worker or node
# A cell that only waits on HTTP APIs (or scripted models) uses little CPU: four per core
# keep a core busy without a worker process per idle connection. A cell with an in-process
# model (llama.cpp) takes a whole core.
API_CELL_CPUS = 0.25
LOCAL_CELL_CPUS = 1.0
# The units pass small records, never bulk data: a Ray started here keeps its object store
# small instead of reserving 30 % of the machine's memory.
LOCAL_OBJECT_STORE_BYTES = 128 * 1024**2
PUMP_S = 0.25  # how often the live table is brought up to date


class RayExecutor:
    name = "ray"

    def __init__(self, settings: ExecutorSettings):
        self.settings = settings
        self._ray: Any = None
        self._owned = False  # True: this executor started Ray and shuts it down
        self._coordinator: Any = None
        self._limits: Any = None

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the run's actors, and shut Ray down if this executor started it."""
        ray, self._ray = self._ray, None
        if ray is None:
            return
        for actor in (self._coordinator, self._limits):
            if actor is not None:
                try:
                    ray.kill(actor)
                except Exception:  # already gone with its node: nothing left to release
                    pass
        self._coordinator = self._limits = None
        if self._owned:
            ray.shutdown()

    # ─── the cluster ────────────────────────────────────────────────────────

    def _connect(self) -> Any:
        """Ray, connected: this process's existing connection, else ``--address``'s cluster,
        else a Ray started here with the machine's cores; and the run's two actors."""
        if self._ray is not None:
            return self._ray
        ray = import_ray()
        if not ray.is_initialized():
            address = self.settings.address
            try:
                ray.init(
                    address=address,
                    object_store_memory=None if address else LOCAL_OBJECT_STORE_BYTES,
                    include_dashboard=False if not address else None,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            except (ConnectionError, RuntimeError, ValueError) as err:
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise LoomError(f"could not start or join {where}: {err}") from None
            self._owned = True
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self._coordinator = (
            ray.remote(Coordinator).options(num_cpus=0, scheduling_strategy=here).remote()
        )
        self._limits = (
            ray.remote(ProviderLimits)
            .options(num_cpus=0, max_concurrency=10_000, scheduling_strategy=here)
            .remote()
        )
        self._ray = ray
        return ray

    def _nodes(self) -> int:
        return sum(1 for node in self._ray.nodes() if node.get("Alive"))

    def _address(self) -> str | None:
        address = self.settings.address
        return (redact_url(address) if "://" in address else address) if address else None

    # ─── rollouts ───────────────────────────────────────────────────────────

    def run_cells(self, batch: CellBatch, progress: ProgressSink) -> list[Transcript]:
        ray = self._connect()
        hub = batch.hub
        limits = _http_limits(hub.provider_concurrency)
        cache_path = str(hub.cache.path) if hub.cache is not None else None
        trio.run(hub.aclose)  # each worker makes its own; this one only carried the settings
        started = time.time()
        ray.get([self._coordinator.begin.remote(started), self._limits.reset.remote(limits)])
        shared = CellPass(
            pass_id=secrets.token_hex(4),
            started=started,
            budgets=batch.budgets,
            base_url=batch.base_url,
            cache_path=cache_path,
            limited=tuple(limits),
        )
        task = ray.remote(run_cell)

        def unit(cell: Cell) -> tuple[str, Callable[[], Any]]:
            job = CellJob(str(cell.plan.dir), cell.index, cell.label, cell.position)
            cpus = self._cpus(cell)
            placed = task.options(num_cpus=cpus, max_retries=RETRIES, retry_exceptions=False)
            return cell.label, lambda: placed.remote(shared, job, self._coordinator, self._limits)

        nodes = self._nodes()
        results, lost = trio.run(
            self._drive, shared.pass_id, [unit(c) for c in batch.cells], batch.concurrency, progress
        )
        outcomes: list[CellOutcome] = list(results.values())
        if hub.cache is not None:  # the closing line counts every worker's hits
            hub.cache.hits += sum(o.cache_hits for o in outcomes)
            hub.cache.stored += sum(o.cache_stored for o in outcomes)
        self._record(batch.record_dir, "run", started, nodes, len(batch.cells), lost)
        if lost:
            raise LoomError(
                f"{len(lost)} of {len(batch.cells)} cells were lost with their workers "
                f"{RETRIES + 1} times ({next(iter(lost.values()))}); their completed turns are "
                f"kept. Continue them with: loom-sim run --resume {batch.record_dir} "
                "--executor ray"
            )
        transcripts = []
        for cell in batch.cells:
            transcript = cell.plan.rollout_spec(cell.index).files.transcript()
            if transcript is None:
                raise LoomError(
                    f"{cell.label} ended on the cluster but its transcript is not in "
                    f"{rollout_dir(cell.plan.dir, cell.index)}: on a cluster, the results folder "
                    "must be on storage every node shares (give --output on such storage)"
                )
            transcripts.append(transcript)
        return transcripts

    def _cpus(self, cell: Cell) -> float:
        if self.settings.cpus_per_cell is not None:
            return self.settings.cpus_per_cell
        providers = {spec.split("/", 1)[0] for spec in cell.plan.record.models.values()}
        in_process = any(p in PROVIDERS and not PROVIDERS.get(p).parallel for p in providers)
        return LOCAL_CELL_CPUS if in_process else API_CELL_CPUS

    # ─── scoring ────────────────────────────────────────────────────────────

    def score(self, batch: ScoreBatch) -> dict[Path, ScoreSummary]:
        ray = self._connect()
        options = batch.options
        jobs: list[tuple[Path, ScoreJob]] = []
        limits: dict[str, int] = {}
        for run_dir in batch.run_dirs:
            record = read_run(run_dir)
            hub = hub_for(
                record.loom_config,
                batch.base_url or record.base_url,
                options.concurrency,
                batch.timeout_s,
                record.prices,
            )
            hub.check(options.judge_model or record.judge)  # before any task starts
            for provider, limit in _http_limits(hub.provider_concurrency).items():
                limits[provider] = min(limits.get(provider, limit), limit)
            for index in range(record.rollouts):
                folder = rollout_dir(run_dir, index)
                if (folder / "transcript.json").is_file():
                    label = _relative(folder, batch.record_dir)
                    jobs.append((run_dir, ScoreJob(str(run_dir), index, label)))
        started = time.time()
        ray.get([self._coordinator.begin.remote(started), self._limits.reset.remote(limits)])
        shared = ScorePass(
            pass_id=secrets.token_hex(4),
            options=options,
            base_url=batch.base_url,
            timeout_s=batch.timeout_s,
            cache_path=str(batch.cache.path) if batch.cache is not None else None,
            limited=tuple(limits),
        )
        task = ray.remote(score_cell).options(
            max_retries=RETRIES, retry_exceptions=False, num_cpus=self._score_cpus()
        )

        def unit(job: ScoreJob) -> tuple[str, Callable[[], Any]]:
            return job.label, lambda: task.remote(shared, job, self._coordinator, self._limits)

        nodes = self._nodes()
        results, lost = trio.run(
            self._drive, shared.pass_id, [unit(job) for _, job in jobs], options.concurrency, None
        )
        for run_dir in batch.run_dirs:
            batch.summaries.setdefault(run_dir, ScoreSummary())
        for run_dir, job in jobs:
            total = batch.summaries[run_dir]
            part = results.get(job.label)
            if part is not None:
                _add(total, part)
        self._record(batch.record_dir, "score", started, nodes, len(jobs), lost)
        if lost:
            raise LoomError(
                f"{len(lost)} rollouts could not be scored: their workers were lost "
                f"{RETRIES + 1} times ({next(iter(lost.values()))}); the turns already scored "
                f"are kept. Continue with: loom-sim score {batch.record_dir} --executor ray"
            )
        return batch.summaries

    def _score_cpus(self) -> float:
        return self.settings.cpus_per_cell or API_CELL_CPUS

    # ─── one pass ───────────────────────────────────────────────────────────

    async def _drive(
        self,
        pass_id: str,
        units: list[tuple[str, Callable[[], Any]]],
        concurrency: int,
        progress: ProgressSink | None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Submit every unit, at most ``concurrency`` in flight; each unit's value by label,
        and the units Ray gave up on with why. A unit that raises one of loom-sim's errors
        stops the pass with that error (the others are cancelled); cancelling the pass
        (Ctrl-C) cancels every task in flight, whose completed turns stay on disk."""
        ray = self._ray
        results: dict[str, Any] = {}
        lost: dict[str, str] = {}
        window = trio.CapacityLimiter(max(1, concurrency))

        async def one(label: str, submit: Callable[[], Any], slot: object) -> None:
            ref = submit()
            try:
                results[label] = await wait_for(ref)
            except ray.exceptions.RayTaskError as err:
                raise _cause(err) from None
            except ray.exceptions.RayError as err:
                lost[label] = _first_line(err)
                if progress is not None:
                    progress.rollout_ended(label, "lost", lost[label])
            except BaseException:
                ray.cancel(ref, force=True)
                raise
            finally:
                window.release_on_behalf_of(slot)

        async def pump() -> None:
            while True:
                await trio.sleep(PUMP_S)
                await self._forward(progress)

        async with trio.open_nursery() as outer:
            outer.start_soon(pump)
            async with trio.open_nursery() as units_running:
                for label, submit in units:  # submitted in the run's order, as locally
                    slot = object()
                    await window.acquire_on_behalf_of(slot)
                    units_running.start_soon(one, label, submit, slot, name=label)
            outer.cancel_scope.cancel()
        await self._forward(progress)
        if lost:  # the slots their last attempts held, if the limits still count them
            attempts = await wait_for(self._coordinator.attempts.remote())
            for label in lost:
                for attempt in range(1, attempts.get(label, 0) + 1):
                    self._limits.drop.remote(holder(pass_id, label, attempt))
        return results, lost

    async def _forward(self, progress: ProgressSink | None) -> None:
        events: list[Event] = await wait_for(self._coordinator.drain.remote())
        if progress is not None:
            for event in events:
                _show(progress, event)

    def _record(
        self, record_dir: Path, phase: str, started: float, nodes: int, cells: int, lost: dict
    ) -> None:
        attempts: dict[str, int] = self._ray.get(self._coordinator.attempts.remote())
        add_execution(
            record_dir,
            Execution(
                executor="ray",
                phase=phase,
                started_at=_iso(started),
                ended_at=_iso(time.time()),
                address=self._address(),
                nodes=nodes,
                cells=cells,
                retries={label: n - 1 for label, n in sorted(attempts.items()) if n > 1},
                lost=sorted(lost),
            ),
        )


def _http_limits(limits: dict[str, int]) -> dict[str, int]:
    """The limits a cluster must hold in one place: those of providers called over HTTP."""
    return {p: n for p, n in limits.items() if p in PROVIDERS and PROVIDERS.get(p).http}


def _show(progress: ProgressSink, event: Event) -> None:
    kind, label, *rest = event
    if kind == "started":
        progress.rollout_started(label, *rest)
    elif kind == "turn":
        progress.turn_done(label, *rest)
    elif kind == "ended":
        progress.rollout_ended(label, *rest)
    elif kind == "retried":
        attempt, node = rest
        progress.rollout_ended(
            label, "retrying", f"attempt {attempt} on node {node[:8]}: its worker was lost"
        )


def _cause(err: Any) -> BaseException:
    """A task's own exception as its own type: one of loom-sim's errors is the user's to act
    on; anything else is a bug, raised as Ray reports it (with the worker's traceback)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, LoomError) else err


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _relative(folder: Path, base: Path) -> str:
    try:
        return str(folder.relative_to(base))
    except ValueError:
        return str(folder)


def _add(total: ScoreSummary, part: ScoreSummary) -> None:
    total.rollouts += part.rollouts
    total.scored_turns += part.scored_turns
    total.skipped_turns += part.skipped_turns
    total.failures += part.failures
    total.written += part.written


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


@executor(
    "ray",
    summary="each rollout (or scoring of one) a Ray task on a cluster, resumed when Ray "
    "retries it; --address joins a cluster (pip install 'loom-sim[ray]')",
    order=20,
)
def open_ray(settings: ExecutorSettings) -> RayExecutor:
    import_ray()  # the sentence that says how to install it, before anything is planned
    return RayExecutor(settings)
