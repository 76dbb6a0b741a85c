"""Scoring a run's folder (a single run, or every arm of a matrix): the step that ``run`` takes
after its rollouts and that ``score`` takes on its own, shared by the command line and the
Python API."""

from __future__ import annotations

from pathlib import Path

from loom_sim.api.say import Say
from loom_sim.executors import Executor, ScoreBatch
from loom_sim.executors.local import LocalExecutor
from loom_sim.models.cache import ResponseCache
from loom_sim.rollout.scoring.engine import ScoreOptions, ScoreSummary
from loom_sim.store.matrix_file import read_matrix


def score_directory(
    run_dir: Path,
    options: ScoreOptions,
    base_url: str | None = None,
    timeout_s: float = 120.0,
    cache: ResponseCache | None = None,
    executor: Executor | None = None,
    *,
    again: str | None = None,
) -> ScoreSummary:
    """Score ``run_dir`` where ``executor`` says (here by default). Ctrl-C stops it cleanly:
    every turn scored so far is kept, and ``again`` (the command that continues) is said."""
    batch = ScoreBatch([run_dir], options, run_dir, base_url, timeout_s, cache, again=again)
    return (executor or LocalExecutor()).score(batch)[run_dir]


def score_matrix(
    run_dir: Path,
    concurrency: int,
    base_url: str | None,
    store: ResponseCache | None,
    *,
    say: Say,
    judge_model: str | None = None,
    judge_window: int | None = None,
    force: bool = False,
    timeout_s: float = 120.0,
    executor: Executor | None = None,
) -> list[Path]:
    """Score every arm (locally one after the other, each arm's rollouts concurrently; on a
    cluster every arm's rollouts at once)."""
    record = read_matrix(run_dir)
    written: list[Path] = []
    options = ScoreOptions(judge_model, judge_window, force, concurrency)
    arms = [a for a in record.arms if any((run_dir / a.key).glob("rollout_*/transcript.json"))]
    batch = ScoreBatch(
        [run_dir / a.key for a in arms], options, run_dir, base_url, timeout_s, store
    )
    summaries = (executor or LocalExecutor()).score(batch)
    for arm in arms:
        summary = summaries[run_dir / arm.key]
        say(
            f"{arm.key}: scored {summary.scored_turns} turns "
            f"({summary.skipped_turns} already scored, "
            f"{summary.failures} scores the judge could not give)"
        )
        written += summary.written
    return written
