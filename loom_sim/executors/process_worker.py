"""What runs in a worker process of the ``processes`` executor: a share of a run's cells, under
one ``trio.run``, exactly as the local executor runs all of them.

The worker is handed its cells by name (run folder, rollout index, label, place in the run's
order) and opens their plans from ``run.json``, as a resumed run does, so nothing the parent
holds in memory has to be pickled and what it runs is what ``--resume`` would run. It makes
its own model hub from the parent's settings with its share of the provider limits, opens the
run's response cache (SQLite in WAL mode: several processes may read and write it at once),
and calls :func:`~loom_sim.rollout.runtime.cells.run_cells` — the same rollouts, services,
files and trace as in one process.

The parent decides when to stop: the worker ignores SIGINT and SIGTERM (a terminal's Ctrl-C
reaches the whole process group, a service manager's SIGTERM every process of the job) and
winds down when the parent says :class:`WindDown`, as the local executor does on Ctrl-C: every
rollout unwinds through its ``finally`` blocks, every completed turn is on disk. If the parent
itself goes (killed, or a second Ctrl-C), its end of the pipe closes and the worker exits at
once, as a kill would stop it: nothing may write a run folder whose lock is no longer held.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import trio

from loom_sim.cpu import THREADS_ENV
from loom_sim.errors import LoomError
from loom_sim.executors.process_messages import (
    Charged,
    Ended,
    Failed,
    Finished,
    Progress,
    Spent,
    Started,
    TurnDone,
    WindDown,
    decode_from_parent,
    send,
)
from loom_sim.models.base import Usage
from loom_sim.models.cache import ResponseCache
from loom_sim.models.hub import HubSettings
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.cells import Cell, run_cells
from loom_sim.rollout.runtime.run import RunPlan
from loom_sim.store.run_file import Budgets, read_run
from loom_sim.store.writer_threads import write_inline

__all__ = ["EXIT_ORPHANED", "CellRef", "WorkerJob", "work"]

EXIT_ORPHANED = 3  # the parent went away: the worker stops as a kill would stop it
PROGRESS_S = 0.1  # how often the rollouts' progress goes to the parent, when there is any


@dataclass(frozen=True)
class CellRef:
    """A cell by name: its plan is opened from ``run_dir``'s ``run.json`` in the worker."""

    run_dir: str
    index: int
    label: str
    position: int


@dataclass(frozen=True)
class WorkerJob:
    """Everything one worker is handed when it starts (pickled once, by ``spawn``)."""

    number: int
    cells: tuple[CellRef, ...]
    concurrency: int  # this worker's share of the run's --concurrency
    hub: HubSettings
    provider_concurrency: dict[str, int]  # this worker's share of the provider limits
    cache_path: str | None
    budgets: Budgets
    started: float  # the pass's start, wall clock: the runtime budget counts from here
    base_url: str | None
    threads: int  # LOOM_SIM_THREADS for this worker's models (unless the user set it)


def work(conn: Connection, job: WorkerJob) -> None:
    """The worker process's body (the target ``multiprocessing`` runs)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if not os.environ.get(THREADS_ENV):
        os.environ[THREADS_ENV] = str(job.threads)  # the cores are shared between workers
    # With one core of its own, a writer thread has nowhere to run but this worker's core.
    write_inline(job.threads <= 1)
    try:
        trio.run(_serve, conn, job)
    finally:
        conn.close()


async def _serve(conn: Connection, job: WorkerJob) -> None:
    cache: ResponseCache | None = None
    progress = PipeProgress(conn)
    try:
        cache = ResponseCache(job.cache_path) if job.cache_path else None
        hub = job.hub.open(cache, job.provider_concurrency)
        cells = _cells(job)
        budget = WorkerBudget(job.budgets, job.started, conn)
        stopping = trio.CancelScope()
        async with trio.open_nursery() as nursery:
            # The listener stays up while the rollouts unwind: a parent gone meanwhile still
            # ends this process at once.
            nursery.start_soon(_listen, conn, stopping, budget)
            nursery.start_soon(progress.send_every, PROGRESS_S)
            with stopping:
                await run_cells(cells, hub, progress, budget, job.concurrency)
            nursery.cancel_scope.cancel()
        progress.send()
        faults = hub.retry.faults
        send(
            conn,
            Finished(
                stopped=stopping.cancelled_caught,
                retried=faults.retried,
                gave_up=faults.gave_up,
                cache_hits=cache.hits if cache else 0,
                cache_misses=cache.misses if cache else 0,
                cache_stored=cache.stored if cache else 0,
                cache_problem=cache.problem if cache else None,
            ),
        )
    except BaseException as raised:  # said to the parent, which decides what the run does
        error = _leaf(raised)
        if not isinstance(error, Exception):
            raise
        if isinstance(error, LoomError):
            said = Failed(str(error))
        else:
            said = Failed("".join(traceback.format_exception(error)), internal=True)
        with contextlib.suppress(OSError):  # a parent that is gone hears nothing
            progress.send()  # what ended before the failure, before the failure
            send(conn, said)
    finally:
        if cache is not None:
            cache.close()


def _leaf(error: BaseException) -> BaseException:
    """The first exception a nursery wrapped (a group of one, nested as nurseries nest)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _cells(job: WorkerJob) -> list[Cell]:
    plans: dict[str, RunPlan] = {}
    cells = []
    for ref in job.cells:
        plan = plans.get(ref.run_dir)
        if plan is None:
            record = read_run(Path(ref.run_dir))
            plan = plans[ref.run_dir] = RunPlan(
                dir=Path(ref.run_dir),
                record=record,
                config=record.loom_config,
                given_base_url=job.base_url,
            )
        cells.append(Cell(plan, ref.index, ref.label, ref.position))
    return cells


async def _listen(conn: Connection, stopping: trio.CancelScope, budget: WorkerBudget) -> None:
    """The parent's messages: the run's spending, and when to stop. Its end closing means
    it is gone: exit at once."""
    while True:
        await trio.lowlevel.wait_readable(conn.fileno())
        try:
            message = decode_from_parent(conn.recv_bytes())
        except (EOFError, OSError):
            os._exit(EXIT_ORPHANED)
        if isinstance(message, Spent):
            budget.heard(message)
        elif isinstance(message, WindDown):
            stopping.cancel()


class WorkerBudget(RunBudget):
    """The run's budgets as one worker sees them: the runtime budget counted from the pass's
    start, and the money spent by the whole run — the parent's last word on the others'
    spending plus this worker's own, counted at once. Each charge goes to the parent (only
    under a cost budget: otherwise nobody needs it), which sums every worker's and tells them
    all, so a budget reached in one worker stops the rollouts of every worker at their next
    turn boundary, as one budget stops them in one process."""

    def __init__(self, budgets: Budgets, started: float, conn: Connection):
        super().__init__(
            budgets.max_cost_usd, budgets.max_runtime_s, clock=time.time, started=started
        )
        self._conn = conn
        self._own = 0.0
        self._others = 0.0

    def charge(self, usage: Usage) -> None:
        if usage.cost_usd is None or self.max_cost_usd is None:
            return
        self._own += usage.cost_usd
        self.cost_usd = self._others + self._own
        send(self._conn, Charged(usage.cost_usd))

    def heard(self, spent: Spent) -> None:
        self._others = spent.total - spent.yours
        self.cost_usd = self._others + self._own


class PipeProgress:
    """The rollouts' progress, for the parent's one live table (``rollout`` is already the
    cell's label: ``run_cells`` names a matrix's cells by arm).

    Events are held and sent together every :data:`PROGRESS_S`, in the order they happened:
    a live table redraws a few times a second, and a message per turn cost this process a
    pipe write and the parent a wake-up each (thousands a second at hundreds of rollouts,
    on the cores the rollouts need)."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._held: list[Started | TurnDone | Ended] = []

    def rollout_started(self, rollout: str, turns: int, done: int) -> None:
        self._held.append(Started(rollout, turns, done))

    def turn_done(self, rollout, turn, phase, tokens, cost, elapsed) -> None:
        self._held.append(TurnDone(rollout, turn, phase, tokens, cost, elapsed))

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None:
        self._held.append(Ended(rollout, status, detail))

    def send(self) -> None:
        """Send what is held, if anything."""
        if self._held:
            events, self._held = self._held, []
            send(self._conn, Progress(events))

    async def send_every(self, interval_s: float) -> None:
        while True:
            await trio.sleep(interval_s)
            self.send()
