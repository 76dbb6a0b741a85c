"""``loom-sim score RUN_DIR``: judge and measure every turn of a run; idempotent, resumable."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click
import trio

from loom_sim.cli import interrupt
from loom_sim.cli.options import (
    base_url_option,
    command_again,
    concurrency_option,
    timeout_option,
)
from loom_sim.errors import LoomError
from loom_sim.runtime.run import hub_for
from loom_sim.scoring.engine import ScoreOptions, ScoreSummary, score_run
from loom_sim.scoring.progress import PlainScoreProgress, RichScoreProgress, ScoreProgress
from loom_sim.store.artifacts import write_json
from loom_sim.store.run_file import RUN_FILE, read_run


def score_directory(
    run_dir: Path,
    options: ScoreOptions,
    base_url: str | None = None,
    timeout_s: float = 120.0,
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
) -> None:
    """Score every turn of RUN_DIR; scored turns are skipped unless --force."""
    options = ScoreOptions(judge_model, judge_window, force, concurrency)
    again = command_again(
        ctx,
        ["score", str(run_dir)],
        ("judge_model", "judge_window", "force", "base_url", "concurrency", "timeout"),
    )
    summary = score_directory(run_dir, options, base_url, timeout, again=again)
    click.echo(
        f"scored {summary.scored_turns} turns in {summary.rollouts} rollouts "
        f"({summary.skipped_turns} already scored, "
        f"{summary.failures} scores the judge could not give)"
    )
    for path in summary.written:
        click.echo(f"updated {path}")
