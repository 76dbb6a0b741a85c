"""``loom-sim score RUN_DIR``: judge and measure every turn of a run; idempotent, resumable."""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.cli.cache import open_cache
from loom_sim.cli.options import (
    base_url_option,
    cache_option,
    chosen_executor,
    command_again,
    concurrency_option,
    executor_options,
    timeout_option,
)
from loom_sim.core.lock import hold
from loom_sim.executors import Executor, ScoreBatch
from loom_sim.executors.local import LocalExecutor
from loom_sim.models.cache import ResponseCache
from loom_sim.rollout.scoring.engine import ScoreOptions, ScoreSummary
from loom_sim.store.matrix_file import is_matrix, read_matrix


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
        click.echo(
            f"{arm.key}: scored {summary.scored_turns} turns "
            f"({summary.skipped_turns} already scored, "
            f"{summary.failures} scores the judge could not give)"
        )
        written += summary.written
    return written


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge-model", metavar="SPEC", help="Judge model (default: the run's judge).")
@click.option(
    "--judge-window",
    type=click.IntRange(min=1),
    help="Turns the judge sees (default: the config's judge_window).",
)
@click.option("--force", is_flag=True, help="Rescore turns that already have scores.")
@base_url_option()
@concurrency_option("Rollouts scored at once.")
@timeout_option()
@cache_option()
@executor_options()
@click.pass_context
def score(
    ctx: click.Context,
    run_dir: Path,
    judge_model,
    judge_window,
    force,
    base_url,
    concurrency,
    timeout,
    cache,
    executor,
    address,
    cpus_per_cell,
) -> None:
    """Score every turn of RUN_DIR; scored turns are skipped unless --force."""
    ctx.with_resource(hold(run_dir))  # one writer per folder: a running run is not scored
    runner = ctx.with_resource(chosen_executor(executor, address, cpus_per_cell))
    if is_matrix(run_dir):  # every arm
        with open_cache(cache) as store:
            written = score_matrix(
                run_dir,
                concurrency,
                base_url,
                store,
                judge_model=judge_model,
                judge_window=judge_window,
                force=force,
                timeout_s=timeout,
                executor=runner,
            )
        for path in written:
            click.echo(f"updated {path}")
        headline(run_dir)
        return
    options = ScoreOptions(judge_model, judge_window, force, concurrency)
    again = command_again(
        ctx,
        ["score", str(run_dir)],
        ("judge_model", "judge_window", "force", "base_url", "concurrency", "timeout", "cache")
        + ("executor", "address", "cpus_per_cell"),
    )
    with open_cache(cache) as store:
        summary = score_directory(run_dir, options, base_url, timeout, store, runner, again=again)
    click.echo(
        f"scored {summary.scored_turns} turns in {summary.rollouts} rollouts "
        f"({summary.skipped_turns} already scored, "
        f"{summary.failures} scores the judge could not give)"
    )
    for path in summary.written:
        click.echo(f"updated {path}")
    headline(run_dir)


def headline(run_dir: Path) -> None:
    """The scored run's headline table, after the paths it updated."""
    from loom_sim.compare.headline import print_headline

    print_headline(run_dir)
