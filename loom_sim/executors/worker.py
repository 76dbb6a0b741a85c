"""What runs inside a Ray task: one unit of work, under its own ``trio.run``.

A unit is one cell (a rollout) or one scoring of one rollout. It opens its run from
``run.json`` on shared storage — never from anything the driver holds in memory — and goes
through loom-sim's own resume: a cell reloads its ``turns.jsonl`` and continues after the last
completed turn, a scoring skips the turns already scored. So when Ray runs a unit again
because its worker or node was lost, the new attempt picks up where the files say the old one
stopped: the turn that was in flight is made again, no completed turn is made twice.

Each attempt reports to the run's :class:`~loom_sim.executors.coordinator.Coordinator` (its
start, its spending, its progress) and takes its HTTP providers' slots from the run's
:class:`~loom_sim.executors.limiter.ProviderLimits`; everything else (the model hub, the
response cache, the embedded model) is its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import trio

from loom_sim.errors import LoomError
from loom_sim.executors.fence import Fence, FencedFiles
from loom_sim.executors.limiter import ClusterLimiter
from loom_sim.executors.ray_support import import_ray, wait_for
from loom_sim.models.base import Usage
from loom_sim.models.cache import ResponseCache
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.cells import hub_models
from loom_sim.rollout.runtime.rollout import Rollout
from loom_sim.rollout.runtime.run import RunPlan, hub_for, make_hub, plan_resume
from loom_sim.rollout.scoring.engine import ScoreOptions, ScoreSummary, score_rollout
from loom_sim.store.run_file import RUN_FILE, Budgets, read_run

__all__ = [
    "CellJob",
    "CellOutcome",
    "CellPass",
    "ClusterBudget",
    "ClusterProgress",
    "ScoreJob",
    "ScorePass",
    "run_cell",
    "score_cell",
]


# ─── what the driver hands out ──────────────────────────────────────────────


@dataclass(frozen=True)
class CellPass:
    """What every cell of one pass shares."""

    pass_id: str  # names this pass's attempts (a resumed run is a new pass)
    started: float  # the pass's start, wall clock: the runtime budget counts from here
    budgets: Budgets
    base_url: str | None
    cache_path: str | None
    limited: tuple[str, ...]  # providers whose limits the cluster holds


@dataclass(frozen=True)
class CellJob:
    run_dir: str  # the single run (or the matrix's arm) the cell belongs to
    index: int  # the rollout's index in it
    label: str  # the cell's id: "rollout_000", or "arm/rollout_000" in a matrix
    position: int  # its place in the run's order


@dataclass(frozen=True)
class CellOutcome:
    label: str
    status: str  # the transcript's ("done", "error"); "done" too for a cell read back
    turns: int
    attempt: int
    node: str
    cache_hits: int = 0
    cache_stored: int = 0


@dataclass(frozen=True)
class ScorePass:
    pass_id: str
    options: ScoreOptions
    base_url: str | None
    timeout_s: float
    cache_path: str | None
    limited: tuple[str, ...]


@dataclass(frozen=True)
class ScoreJob:
    run_dir: str
    index: int
    label: str


# ─── a cell ─────────────────────────────────────────────────────────────────


def run_cell(shared: CellPass, job: CellJob, coordinator: Any, limits: Any) -> CellOutcome:
    """The Ray task's body: one cell, in a trio run of its own."""
    return trio.run(_run_cell, shared, job, coordinator, limits)


async def _run_cell(shared: CellPass, job: CellJob, coordinator: Any, limits: Any) -> CellOutcome:
    node = import_ray().get_runtime_context().get_node_id()
    attempt, spent = await wait_for(coordinator.attempt_started.remote(job.label, node))
    mine = holder(shared.pass_id, job.label, attempt)
    for earlier in range(1, attempt):  # a lost worker cannot give its slots back
        limits.drop.remote(holder(shared.pass_id, job.label, earlier))
    try:
        plan = _open_plan(Path(job.run_dir), shared.base_url, node)
        spec = plan.rollout_spec(job.index)
        finished = spec.files.transcript()
        if finished is not None and finished.status == "done":
            return CellOutcome(job.label, "done", len(finished.turns), attempt, node)
        fence = Fence(spec.files.dir, f"{mine} on {node}")
        fence.claim()
        spec = replace(spec, files=FencedFiles(spec.files.dir, fence))
        with _opened(shared.cache_path) as cache:
            limiters = {p: ClusterLimiter(limits, p, mine) for p in shared.limited}
            hub = make_hub(plan, cache, limiters)
            source = hub_models(hub)
            budget = ClusterBudget(coordinator, job.label, attempt, shared, spent)
            progress = ClusterProgress(coordinator, job.label)
            try:
                transcript = await Rollout(
                    spec, lambda model, _, role: source(model, job.position, role), budget, progress
                ).run()
            finally:
                with trio.CancelScope(shield=True):
                    await hub.aclose()
            hits, stored = (cache.hits, cache.stored) if cache is not None else (0, 0)
        fence.release()
        return CellOutcome(
            job.label, transcript.status, len(transcript.turns), attempt, node, hits, stored
        )
    finally:
        limits.drop.remote(mine)
        # Calls from one worker reach the coordinator in order: when this one returns, every
        # progress event of the attempt is queued for the driver.
        await wait_for(coordinator.attempt_ended.remote(job.label, attempt))


def holder(pass_id: str, label: str, attempt: int) -> str:
    """The name an attempt holds its slots and its cell's fence under."""
    return f"{pass_id}:{label}#{attempt}"


def _open_plan(run_dir: Path, base_url: str | None, node: str) -> RunPlan:
    if not (run_dir / RUN_FILE).is_file():
        raise LoomError(
            f"node {node[:8]} cannot see {run_dir / RUN_FILE}: on a cluster, the results folder "
            "must be on storage every node shares (give --output on such storage)"
        )
    return plan_resume(run_dir, base_url=base_url)


@contextlib.contextmanager
def _opened(path: str | None) -> Iterator[ResponseCache | None]:
    if path is None:
        yield None
        return
    cache = ResponseCache(path)
    try:
        yield cache
    finally:
        cache.close()


class ClusterBudget(RunBudget):
    """The run's budgets as one worker sees them: its calls are charged to the coordinator
    as they return, and a budget is exceeded when the whole run's spending (the last total the
    coordinator gave back, plus this worker's charges still on their way) reaches it. Checked
    at turn boundaries, as locally: never a blocking call on the worker's event loop."""

    def __init__(self, coordinator: Any, cell: str, attempt: int, shared: CellPass, spent: float):
        budgets = shared.budgets
        super().__init__(
            budgets.max_cost_usd, budgets.max_runtime_s, clock=time.time, started=shared.started
        )
        self._coordinator, self._cell, self._attempt = coordinator, cell, attempt
        self._known = spent
        self._pending: list[tuple[Any, float]] = []
        self.cost_usd = spent

    def charge(self, usage: Usage) -> None:
        if usage.cost_usd is None or self.max_cost_usd is None:
            return  # nothing to count, or nothing to count it against
        ref = self._coordinator.charge.remote(self._cell, self._attempt, usage.cost_usd)
        self._pending.append((ref, usage.cost_usd))
        self.cost_usd += usage.cost_usd

    def exceeded(self) -> tuple[str, str] | None:
        if self._pending:
            ray = import_ray()
            refs = [ref for ref, _ in self._pending]
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if ready:
                self._known = max(self._known, *ray.get(ready))
                answered = set(ready)
                self._pending = [(r, c) for r, c in self._pending if r not in answered]
            self.cost_usd = self._known + sum(c for _, c in self._pending)
        return super().exceeded()


class ClusterProgress:
    """A rollout's progress, sent to the coordinator for the driver's live table."""

    def __init__(self, coordinator: Any, label: str):
        self._coordinator, self._label = coordinator, label

    def rollout_started(self, rollout: str, turns: int, done: int) -> None:
        self._coordinator.report.remote(("started", self._label, turns, done))

    def turn_done(self, rollout, turn, phase, tokens, cost, elapsed) -> None:
        self._coordinator.report.remote(("turn", self._label, turn, phase, tokens, cost, elapsed))

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None:
        self._coordinator.report.remote(("ended", self._label, status, detail))


# ─── a scoring ──────────────────────────────────────────────────────────────


def score_cell(shared: ScorePass, job: ScoreJob, coordinator: Any, limits: Any) -> ScoreSummary:
    """The Ray task's body: one rollout's scoring, in a trio run of its own."""
    return trio.run(_score_cell, shared, job, coordinator, limits)


async def _score_cell(
    shared: ScorePass, job: ScoreJob, coordinator: Any, limits: Any
) -> ScoreSummary:
    node = import_ray().get_runtime_context().get_node_id()
    attempt, _ = await wait_for(coordinator.attempt_started.remote(job.label, node))
    mine = holder(shared.pass_id, job.label, attempt)
    for earlier in range(1, attempt):
        limits.drop.remote(holder(shared.pass_id, job.label, earlier))
    run_dir = Path(job.run_dir)
    summary = ScoreSummary()
    try:
        _open_plan(run_dir, shared.base_url, node)  # the same sentence when it is not shared
        record = read_run(run_dir)
        with _opened(shared.cache_path) as cache:
            hub = hub_for(
                record.loom_config,
                shared.base_url or record.base_url,
                shared.options.concurrency,
                shared.timeout_s,
                record.prices,
                cache,
                {p: ClusterLimiter(limits, p, mine) for p in shared.limited},
            )
            try:
                await score_rollout(run_dir, job.index, hub, shared.options, summary, record)
            finally:
                with trio.CancelScope(shield=True):
                    await hub.aclose()
        return summary
    finally:
        limits.drop.remote(mine)
        await wait_for(coordinator.attempt_ended.remote(job.label, attempt))
