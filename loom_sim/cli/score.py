"""``loom-sim score RUN_DIR``: judge and measure every turn of a run; idempotent, resumable."""

from __future__ import annotations

from pathlib import Path

import click
import trio

from loom_sim.cli.cache import open_cache
from loom_sim.cli.options import (
    base_url_option,
    cache_option,
    concurrency_option,
    timeout_option,
)
from loom_sim.models.cache import ResponseCache
from loom_sim.runtime.run import hub_for
from loom_sim.scoring.engine import ScoreOptions, ScoreSummary, score_run
from loom_sim.store.matrix_file import is_matrix, read_matrix
from loom_sim.store.run_file import read_run


def score_directory(
    run_dir: Path,
    options: ScoreOptions,
    base_url: str | None = None,
    timeout_s: float = 120.0,
    cache: ResponseCache | None = None,
) -> ScoreSummary:
    record = read_run(run_dir)
    hub = hub_for(
        record.loom_config,
        base_url or record.base_url,
        options.concurrency,
        timeout_s,
        record.prices,
        cache,
    )

    async def main() -> ScoreSummary:
        try:
            return await score_run(run_dir, hub, options)
        finally:
            with trio.CancelScope(shield=True):
                await hub.aclose()

    return trio.run(main)


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
) -> list[Path]:
    """Score every arm (one after the other: each arm's rollouts run concurrently)."""
    record = read_matrix(run_dir)
    written: list[Path] = []
    options = ScoreOptions(judge_model, judge_window, force, concurrency)
    for arm in record.arms:
        arm_dir = run_dir / arm.key
        if not any(arm_dir.glob("rollout_*/transcript.json")):
            continue
        summary = score_directory(arm_dir, options, base_url, timeout_s, store)
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
def score(
    run_dir: Path, judge_model, judge_window, force, base_url, concurrency, timeout, cache
) -> None:
    """Score every turn of RUN_DIR; scored turns are skipped unless --force."""
    if is_matrix(run_dir):  # every arm, one after the other
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
            )
        for path in written:
            click.echo(f"updated {path}")
        return
    options = ScoreOptions(judge_model, judge_window, force, concurrency)
    with open_cache(cache) as store:
        summary = score_directory(run_dir, options, base_url, timeout, store)
    click.echo(
        f"scored {summary.scored_turns} turns in {summary.rollouts} rollouts "
        f"({summary.skipped_turns} already scored, "
        f"{summary.failures} scores the judge could not give)"
    )
    for path in summary.written:
        click.echo(f"updated {path}")
