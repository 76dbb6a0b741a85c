"""``loom-sim score RUN_DIR``: judge and measure every turn of a run; idempotent, resumable."""

from __future__ import annotations

from pathlib import Path

import click
import trio

from loom_sim.cli.options import base_url_option, concurrency_option, timeout_option
from loom_sim.runtime.run import hub_for
from loom_sim.scoring.engine import ScoreOptions, ScoreSummary, score_run
from loom_sim.store.run_file import read_run


def score_directory(
    run_dir: Path, options: ScoreOptions, base_url: str | None = None, timeout_s: float = 120.0
) -> ScoreSummary:
    record = read_run(run_dir)
    hub = hub_for(
        record.loom_config,
        base_url or record.base_url,
        options.concurrency,
        timeout_s,
        record.prices,
    )

    async def main() -> ScoreSummary:
        try:
            return await score_run(run_dir, hub, options)
        finally:
            with trio.CancelScope(shield=True):
                await hub.aclose()

    return trio.run(main)


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
def score(run_dir: Path, judge_model, judge_window, force, base_url, concurrency, timeout) -> None:
    """Score every turn of RUN_DIR; scored turns are skipped unless --force."""
    options = ScoreOptions(judge_model, judge_window, force, concurrency)
    summary = score_directory(run_dir, options, base_url, timeout)
    click.echo(
        f"scored {summary.scored_turns} turns in {summary.rollouts} rollouts "
        f"({summary.skipped_turns} already scored, "
        f"{summary.failures} scores the judge could not give)"
    )
    for path in summary.written:
        click.echo(f"updated {path}")
