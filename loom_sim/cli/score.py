"""``loom-sim score RUN_DIR``: judge and measure every turn of a run; idempotent, resumable."""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.api.scoring import score_directory
from loom_sim.api.scoring import score_matrix as _score_matrix
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
from loom_sim.models.cache import ResponseCache
from loom_sim.rollout.scoring.engine import ScoreOptions
from loom_sim.store.matrix_file import is_matrix


def score_matrix(
    run_dir: Path, concurrency: int, base_url: str | None, store: ResponseCache | None, **given
) -> list[Path]:
    """Every arm scored (see :func:`loom_sim.api.scoring.score_matrix`), said on the terminal."""
    return _score_matrix(run_dir, concurrency, base_url, store, say=click.echo, **given)


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
