"""The ``processes`` executor: a run's cells split over worker processes on this machine.

One process runs loom-sim's own work — prompts, monitors, records, the trio loop — on one
core; a run of hundreds of rollouts against a fast local server is CPU-bound there while the
other cores idle. This executor starts ``--workers N`` processes (``multiprocessing``'s
``spawn``: the parent has threads, which ``fork`` would copy in whatever state they are in)
and deals the cells still to run out to them in the run's order, round-robin, so the first
cells start first as they do in one process. Each worker runs its share under one
``trio.run`` with a model hub of its own (:mod:`.process_worker`), holding its share of
``--concurrency`` and of every HTTP provider's limit, so the totals are what one process would
hold.

The parent keeps what a run has once: the folder's lock, ``run.json``, the one progress table
(each worker's events arrive over its pipe, in order, and go to the same sink), the budget
(it sums every worker's spending and tells them all, so a budget reached anywhere stops every
rollout at its next turn boundary), and the model-call faults and cache counts of the closing
lines. Ctrl-C or SIGTERM to the parent tells every worker to stop, waits for them to unwind
(every completed turn is on disk) and ends as the local executor does. A worker that dies
(the OOM killer, SIGKILL) is noticed by its pipe closing and its process sentinel: the parent
stops the others and ends with one sentence naming the command that continues the run.

Scoring stays in this process (``score`` is the local executor's): it is a fraction of a run's
time, and its turns are judged in lanes that one process already keeps busy.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import time
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import trio

from loom_sim.core import interrupt
from loom_sim.errors import LoomError
from loom_sim.executors.base import CellBatch, ExecutorSettings, ScoreBatch, executor
from loom_sim.executors.local import LocalExecutor
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
    decode_from_worker,
    send,
)
from loom_sim.executors.process_worker import CellRef, WorkerJob, work
from loom_sim.executors.worker_count import choose_workers, threads_per_worker
from loom_sim.models.providers import PROVIDERS
from loom_sim.models.retry import Faults
from loom_sim.plugins import Registry
from loom_sim.rollout.runtime.cells import Cell
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.scoring.engine import ScoreSummary
from loom_sim.store.distribution import Execution
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import add_execution

__all__ = ["ProcessesExecutor", "WorkerCrashed", "share"]


class WorkerCrashed(Exception):
    """A worker hit a bug (not one of loom-sim's errors): its traceback, for the report."""


def share(total: int, parts: int, part: int) -> int:
    """Part ``part`` of ``total`` split in ``parts`` as evenly as whole numbers go (the
    first ones get the remainder), at least 1."""
    return max(1, total // parts + (1 if part < total % parts else 0))


class ProcessesExecutor:
    name = "processes"

    def __init__(self, settings: ExecutorSettings):
        self.workers = settings.workers  # None: loom-sim chooses (worker_count)
        self.chosen: int | None = None  # the last pass's workers (1: it ran locally)

    def __enter__(self) -> ProcessesExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run_cells(self, batch: CellBatch, progress: ProgressSink) -> list[Transcript]:
        """The cells still to run, over the workers (one worker: the local executor runs
        them, as ``--workers 1`` does)."""
        pending = [c for c in batch.cells if not _finished(c)]
        limits = batch.hub.provider_concurrency
        count = choose_workers(self.workers, pending, batch.concurrency, limits)
        if count > 1 and Registry.temporary:
            # Plug-ins registered from code for a ``with`` block exist in this process only:
            # a worker would not find them (a config naming such a scorer would not even
            # validate there). Entry points and decorators in importable modules are fine.
            if self.workers is not None:  # asked for: say why it is not done
                warnings.warn(
                    f"{', '.join(sorted(Registry.temporary))} registered from code: worker "
                    "processes would not see it, so the rollouts run in this process",
                    stacklevel=2,
                )
            count = 1
        self.chosen = count
        if count <= 1:
            return LocalExecutor().run_cells(batch, progress)
        return _Pass(batch, progress, pending, count).run()

    def score(self, batch: ScoreBatch) -> dict[Path, ScoreSummary]:
        """In this process, as the local executor scores."""
        return LocalExecutor().score(batch)


def _finished(cell: Cell) -> bool:
    transcript = cell.plan.rollout_spec(cell.index).files.transcript()
    return transcript is not None and transcript.status == "done"


@dataclass
class _Worker:
    number: int
    job: WorkerJob
    process: BaseProcess | None = None
    conn: Connection | None = None
    spent: float = 0.0  # what its calls cost, as far as the parent has heard
    running: set[str] = field(default_factory=set)  # cells started and not ended
    ended: set[str] = field(default_factory=set)
    outcome: Finished | Failed | None = None
    told_to_stop: bool = False
    lost: str | None = None  # how it died, if it did
    wake: trio.Event = field(default_factory=trio.Event)  # the run's spending changed


class _Pass:
    """One pass of the executor over a batch: start the workers, hear them, end them."""

    def __init__(self, batch: CellBatch, progress: ProgressSink, pending: list[Cell], count: int):
        self.batch, self.progress = batch, progress
        self.started = time.time()
        self.total = 0.0  # the run's spending, summed over workers
        settings = batch.hub.settings()
        # The cores are shared: each worker's llama.cpp and ONNX Runtime get their part.
        threads = threads_per_worker(count)
        cache = batch.hub.cache
        self.workers: list[_Worker] = []
        for number in range(count):
            limits = {
                p: share(n, count, number) if PROVIDERS.get(p).http else n
                for p, n in settings.provider_concurrency.items()
            }
            job = WorkerJob(
                number=number,
                cells=tuple(
                    CellRef(str(c.plan.dir), c.index, c.label, c.position)
                    for c in pending[number::count]
                ),
                concurrency=share(batch.concurrency, count, number),
                hub=settings,
                provider_concurrency=limits,
                cache_path=str(cache.path) if cache is not None else None,
                budgets=batch.budgets,
                started=self.started,
                base_url=batch.base_url,
                threads=threads,
            )
            self.workers.append(_Worker(number, job))

    def run(self) -> list[Transcript]:
        try:
            interrupt.run(self._drive)
        finally:
            self._end()
        self._raise_failures()
        transcripts = []
        for cell in self.batch.cells:
            transcript = cell.plan.rollout_spec(cell.index).files.transcript()
            if transcript is None:
                raise LoomError(f"{cell.label} ended in its worker but left no transcript")
            transcripts.append(transcript)
        return transcripts

    # ─── the workers' lives ─────────────────────────────────────────────────

    async def _drive(self) -> None:
        await self.batch.hub.aclose()  # each worker makes its own; this one carried settings
        context = multiprocessing.get_context("spawn")
        for worker in self.workers:
            parent_end, child_end = context.Pipe(duplex=True)
            process = context.Process(
                target=work,
                args=(child_end, worker.job),
                name=f"loom-sim worker {worker.number}",
                daemon=True,  # never outlives the parent, whatever ends it
            )
            process.start()
            child_end.close()  # the worker's end is the worker's: its exit closes the pipe
            worker.process, worker.conn = process, parent_end
        async with trio.open_nursery() as tellers:
            if self.batch.budgets.max_cost_usd is not None:
                for worker in self.workers:
                    tellers.start_soon(self._tell, worker)
            async with trio.open_nursery() as listeners:
                for worker in self.workers:
                    listeners.start_soon(self._listen, worker)
            tellers.cancel_scope.cancel()

    async def _listen(self, worker: _Worker) -> None:
        """Hear one worker until it ends. Cancelled (Ctrl-C, SIGTERM): tell every worker to
        stop, and keep hearing this one until it has unwound."""
        try:
            await self._hear(worker)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                self._stop_all()
                await self._hear(worker)
            raise

    async def _hear(self, worker: _Worker) -> None:
        assert worker.conn is not None and worker.process is not None
        if worker.lost is not None or worker.process.exitcode is not None:
            return
        conn = worker.conn
        while True:
            await trio.lowlevel.wait_readable(conn.fileno())
            try:
                message = decode_from_worker(conn.recv_bytes())
            except (EOFError, OSError):
                break  # the worker's end closed: it has exited, or is exiting
            self._heard(worker, message)
        await trio.lowlevel.wait_readable(worker.process.sentinel)
        worker.process.join()
        if worker.outcome is None:
            self._lose(worker)

    def _progressed(self, worker: _Worker, event: Started | TurnDone | Ended) -> None:
        progress = self.progress
        match event:
            case TurnDone(label, turn, phase, tokens, cost, elapsed):
                progress.turn_done(label, turn, phase, tokens, cost, elapsed)
            case Started(label, turns, done):
                worker.running.add(label)
                progress.rollout_started(label, turns, done)
            case Ended(label, status, detail):
                worker.running.discard(label)
                worker.ended.add(label)
                progress.rollout_ended(label, status, detail)

    def _heard(self, worker: _Worker, message: object) -> None:
        match message:
            case Progress(events):
                for event in events:
                    self._progressed(worker, event)
            case Charged(usd):
                worker.spent += usd
                self.total += usd
                for other in self.workers:
                    other.wake.set()
            case Finished() | Failed():
                worker.outcome = message
                if isinstance(message, Failed):
                    self._stop_all()

    async def _tell(self, worker: _Worker) -> None:
        """Keep one worker's view of the run's spending up to date (the latest total only:
        a worker slower to read skips the totals it missed)."""
        assert worker.conn is not None
        while True:
            await worker.wake.wait()
            worker.wake = trio.Event()
            await trio.lowlevel.wait_writable(worker.conn.fileno())
            try:
                send(worker.conn, Spent(self.total, worker.spent))
            except OSError:
                return  # it has gone; its listener says so

    def _stop_all(self) -> None:
        for worker in self.workers:
            if worker.told_to_stop or worker.conn is None or worker.outcome is not None:
                continue
            worker.told_to_stop = True
            with contextlib.suppress(OSError):  # one that has gone is heard by its listener
                send(worker.conn, WindDown())

    def _lose(self, worker: _Worker) -> None:
        assert worker.process is not None
        code = worker.process.exitcode or 0
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        worker.lost = f"worker process {worker.process.pid} {how}"
        for label in sorted(worker.running):
            if not self._ended_on_disk(label):
                self.progress.rollout_ended(label, "lost", "its worker process ended")
        self._stop_all()

    def _ended_on_disk(self, label: str) -> bool:
        """Whether the cell ``label`` wrote its transcript in this pass: a worker's last
        progress (up to ``PROGRESS_S`` of it) dies with the worker, its files do not."""
        cell = next((c for c in self.batch.cells if c.label == label), None)
        if cell is None:
            return False
        path = cell.plan.rollout_spec(cell.index).files.transcript_path
        try:
            return path.stat().st_mtime >= self.started
        except OSError:
            return False

    # ─── the end ────────────────────────────────────────────────────────────

    def _end(self) -> None:
        """Whatever happened: no worker left running, their faults and cache counts added to
        the parent's, and the pass recorded in ``run.json``."""
        hub = self.batch.hub
        for worker in self.workers:
            process = worker.process
            if process is not None and process.exitcode is None:
                process.kill()  # only when the parent itself failed: nothing else stops it
                process.join()
            if worker.conn is not None:
                worker.conn.close()
            if isinstance(worker.outcome, Finished):
                _add_faults(hub.retry.faults, worker.outcome)
                if hub.cache is not None:
                    hub.cache.hits += worker.outcome.cache_hits
                    hub.cache.misses += worker.outcome.cache_misses
                    hub.cache.stored += worker.outcome.cache_stored
                    hub.cache.problem = hub.cache.problem or worker.outcome.cache_problem
        lost = sorted(
            ref.label
            for worker in self.workers
            if worker.lost is not None
            for ref in worker.job.cells
            if ref.label not in worker.ended and not self._ended_on_disk(ref.label)
        )
        with contextlib.suppress(LoomError):  # a full disk: not worth hiding the outcome for
            add_execution(
                self.batch.record_dir,
                Execution(
                    executor="processes",
                    phase="run",
                    started_at=_iso(self.started),
                    ended_at=_iso(time.time()),
                    cells=len(self.batch.cells),
                    workers=len(self.workers),
                    lost=lost,
                ),
            )

    def _raise_failures(self) -> None:
        for worker in self.workers:
            if isinstance(worker.outcome, Failed):
                if worker.outcome.internal:
                    raise WorkerCrashed(worker.outcome.message)
                raise LoomError(worker.outcome.message)
        lost = [w.lost for w in self.workers if w.lost is not None]
        if lost:
            again = self.batch.again or f"loom-sim run --resume {self.batch.record_dir}"
            raise LoomError(
                f"{lost[0]} before its rollouts ended; the other workers stopped and every "
                f"completed turn is saved in {self.batch.record_dir}. Continue with: {again}"
            )


def _add_faults(faults: Faults, finished: Finished) -> None:
    for spec, reasons in finished.retried.items():
        mine = faults.retried.setdefault(spec, {})
        for reason, count in reasons.items():
            mine[reason] = mine.get(reason, 0) + count
    for spec, count in finished.gave_up.items():
        faults.gave_up[spec] = faults.gave_up.get(spec, 0) + count


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


@executor(
    "processes",
    summary="the rollouts split over worker processes on this machine, each with its own "
    "trio loop and model hub (--workers N)",
    order=15,
)
def open_processes(settings: ExecutorSettings) -> ProcessesExecutor:
    return ProcessesExecutor(settings)
