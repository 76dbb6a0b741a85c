"""What an executor is: the part of loom-sim that decides *where* units of work run.

A run is planned (``run.json``, its cells) and reported in one place, whatever executes it;
between the two, an executor takes the units of work — one cell (a rollout of a run or of a
matrix's arm), or one scoring of one rollout — and runs them: all in this process under one
trio nursery (``local``), split over worker processes on this machine (``processes``), or as
tasks on a Ray cluster (``ray``). Every unit writes through the
same crash-safe files and resumes from them, so executors differ only in where the work
happens and what is shared: the model hub's limits, the budgets, the progress table.

Executors are registered (:data:`EXECUTORS`), so ``--executor`` lists what is installed and a
package can add one (a Dask or Slurm executor) through the ``loom_sim.executors`` entry-point
group without editing loom-sim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from loom_sim.models.cache import ResponseCache
from loom_sim.models.hub import ModelHub
from loom_sim.plugins import Plugin, Registry
from loom_sim.rollout.runtime.cells import Cell
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.scoring.engine import ScoreOptions, ScoreSummary
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import Budgets

__all__ = [
    "EXECUTORS",
    "CellBatch",
    "Executor",
    "ExecutorInfo",
    "ExecutorSettings",
    "ScoreBatch",
    "executor",
    "open_executor",
]


@dataclass(frozen=True)
class ExecutorSettings:
    """The command line's choices for the executors that run work elsewhere (ignored by
    ``local``)."""

    address: str | None = None  # an existing cluster to join; None: start one here
    cpus_per_cell: float | None = None  # None: 1 for in-process models, a fraction otherwise
    workers: int | None = None  # processes: worker processes; None: chosen from the machine


@dataclass
class CellBatch:
    """Cells to run, and what they share."""

    cells: list[Cell]
    hub: ModelHub  # ``local`` calls through it; a cluster reads its limits, server and cache
    budgets: Budgets
    concurrency: int  # cells running at once
    record_dir: Path  # the folder whose run.json records the pass (the matrix's, or the run's)
    base_url: str | None = None  # as given (run.json holds it redacted)
    again: str | None = None  # the command that continues the run, said when it stops early


@dataclass
class ScoreBatch:
    """Runs (single runs, or a matrix's arms) whose ended rollouts are to be scored."""

    run_dirs: list[Path]
    options: ScoreOptions
    record_dir: Path
    base_url: str | None = None
    timeout_s: float = 120.0
    cache: ResponseCache | None = None
    again: str | None = None  # the command that continues an interrupted scoring
    summaries: dict[Path, ScoreSummary] = field(default_factory=dict)


class Executor(Protocol):
    """Runs a batch of units of work; a context manager that releases what it started."""

    name: str

    def run_cells(self, batch: CellBatch, progress: ProgressSink) -> list[Transcript]:
        """Every cell of the batch (a finished one read back, not run again); their
        transcripts in the batch's order. The batch's hub is closed at the end."""
        ...

    def score(self, batch: ScoreBatch) -> dict[Path, ScoreSummary]:
        """Score every ended rollout of every run of the batch; a summary per run folder."""
        ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


@dataclass(frozen=True, kw_only=True)
class ExecutorInfo(Plugin):
    """A registered executor: ``open`` imports its implementation when it is chosen, so an
    optional dependency (Ray) is needed only by those who use it."""

    open: Callable[[ExecutorSettings], Executor]


EXECUTORS: Registry[ExecutorInfo] = Registry("executor", "loom_sim.executors")

Opener = Callable[[ExecutorSettings], Executor]


def executor(name: str, **fields: object) -> Callable[[Opener], Opener]:
    """Register the decorated ``open(settings) -> Executor`` as executor ``name``."""

    def register(open_: Opener) -> Opener:
        EXECUTORS.add(ExecutorInfo(name=name, open=open_, **fields))  # type: ignore[arg-type]
        return open_

    return register


def open_executor(name: str, settings: ExecutorSettings | None = None) -> Executor:
    return EXECUTORS.get(name).open(settings or ExecutorSettings())
