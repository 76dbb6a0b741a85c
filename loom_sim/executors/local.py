"""The local executor: every unit of work in this process, under one trio nursery.

What loom-sim has always done: the cells share one model hub (one limit per provider, one
embedded model in memory, one response cache), one budget and one bound on the cells running
at once. It needs nothing beyond loom-sim itself, and a few hundred concurrent rollouts
against remote APIs fit in it.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import trio

from loom_sim.core import interrupt
from loom_sim.errors import LoomError
from loom_sim.executors.base import CellBatch, ExecutorSettings, ScoreBatch, executor
from loom_sim.models.cache import ResponseCache
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.cells import run_cells
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.runtime.run import hub_for
from loom_sim.rollout.scoring.engine import ScoreOptions, ScoreSummary, score_run
from loom_sim.rollout.scoring.progress import PlainScoreProgress, RichScoreProgress, ScoreProgress
from loom_sim.store.artifacts import write_json
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import RUN_FILE, read_run

__all__ = ["LocalExecutor", "score_dir"]


class LocalExecutor:
    name = "local"

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run_cells(self, batch: CellBatch, progress: ProgressSink) -> list[Transcript]:
        """The cells under one ``trio.run``; a first Ctrl-C winds them down (every completed
        turn on disk) and raises :class:`~loom_sim.core.interrupt.Interrupted`."""
        budget = RunBudget(batch.budgets.max_cost_usd, batch.budgets.max_runtime_s)
        return interrupt.run(run_cells, batch.cells, batch.hub, progress, budget, batch.concurrency)

    def score(self, batch: ScoreBatch) -> dict[Path, ScoreSummary]:
        """Each run in turn; within a run, ``options.concurrency`` rollouts at once."""
        for run_dir in batch.run_dirs:
            batch.summaries[run_dir] = score_dir(
                run_dir,
                batch.options,
                batch.base_url,
                batch.timeout_s,
                batch.cache,
                again=batch.again,
                arm=run_dir.name if run_dir != batch.record_dir else None,
            )
        return batch.summaries


def score_dir(
    run_dir: Path,
    options: ScoreOptions,
    base_url: str | None = None,
    timeout_s: float = 120.0,
    cache: ResponseCache | None = None,
    *,
    again: str | None = None,
    arm: str | None = None,
) -> ScoreSummary:
    """Score one run's rollouts in this process, with a hub of its own and progress on
    screen (naming ``arm``, a matrix's arm being scored). Ctrl-C stops it cleanly: every turn
    scored so far is in its transcript, and ``again`` (the command that continues) is said.
    The judge's retries are added to the run's ``run.json`` beside the rollouts'."""
    record = read_run(run_dir)
    hub = hub_for(
        record.loom_config,
        base_url or record.base_url,
        options.concurrency,
        timeout_s,
        record.prices,
        cache,
    )

    async def main(progress: ScoreProgress) -> ScoreSummary:
        try:
            return await score_run(run_dir, hub, options, progress)
        finally:
            with trio.CancelScope(shield=True):
                await hub.aclose()

    stopping = "stopping: saving the turns scored"
    try:
        if sys.stderr.isatty():
            with RichScoreProgress(arm) as live:
                return interrupt.run(main, live, stopping=stopping)
        return interrupt.run(main, PlainScoreProgress(arm=arm), stopping=stopping)
    except interrupt.Interrupted:
        command = again or f"loom-sim score {run_dir}"
        raise interrupt.Interrupted(
            f"interrupted while scoring: every turn scored so far is saved in {run_dir}. "
            f"Continue with: {command}"
        ) from None
    finally:
        faults = hub.retry.faults
        if not faults.empty:  # the judge's retries, beside the rollouts' (run.json)
            record.add_faults(faults)
            with contextlib.suppress(LoomError):  # a full disk: not worth failing over
                write_json(run_dir / RUN_FILE, record)


@executor(
    "local",
    summary="every rollout in this process, one trio nursery (the default)",
    order=10,
)
def open_local(settings: ExecutorSettings) -> LocalExecutor:
    return LocalExecutor()
