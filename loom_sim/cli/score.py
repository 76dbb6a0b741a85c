"""``loom-sim score RUN_DIR``: judge and measure every turn of a run; idempotent, resumable."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click
import trio

from loom_sim.cli import interrupt
from loom_sim.cli.cache import open_cache
from loom_sim.cli.options import (
    base_url_option,
    cache_option,
    command_again,
    concurrency_option,
    timeout_option,
)
from loom_sim.errors import LoomError
from loom_sim.models.cache import ResponseCache
from loom_sim.runtime.run import hub_for
from loom_sim.scoring.engine import ScoreOptions, ScoreSummary, score_run
from loom_sim.scoring.progress import PlainScoreProgress, RichScoreProgress, ScoreProgress
from loom_sim.store.artifacts import write_json
from loom_sim.store.matrix_file import is_matrix, read_matrix
from loom_sim.store.run_file import RUN_FILE, read_run


def score_directory(
    run_dir: Path,
    options: ScoreOptions,
    base_url: str | None = None,
    timeout_s: float = 120.0,
    cache: ResponseCache | None = None,
    *,
    again: str | None = None,
) -> ScoreSummary:
    """Score ``run_dir`` with progress on screen. Ctrl-C stops it cleanly: every turn scored
    so far is in its transcript, and ``again`` (the command that continues) is said."""
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

    try:
        if sys.stderr.isatty():
            with RichScoreProgress() as live:
                return interrupt.run(main, live, stopping="stopping: saving the turns scored")
        return interrupt.run(
            main, PlainScoreProgress(), stopping="stopping: saving the turns scored"
        )
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
    again = command_again(
        ctx,
        ["score", str(run_dir)],
        ("judge_model", "judge_window", "force", "base_url", "concurrency", "timeout", "cache"),
    )
    with open_cache(cache) as store:
        summary = score_directory(run_dir, options, base_url, timeout, store, again=again)
    click.echo(
        f"scored {summary.scored_turns} turns in {summary.rollouts} rollouts "
        f"({summary.skipped_turns} already scored, "
        f"{summary.failures} scores the judge could not give)"
    )
    for path in summary.written:
        click.echo(f"updated {path}")
