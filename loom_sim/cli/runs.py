"""``loom-sim runs [RESULTS_DIR]``: every run, newest first, with its status."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from loom_sim.cli.console import table_console
from loom_sim.runs.catalog import STATUSES, RunSummary, find_runs

_STYLE = {"complete": "green", "partial": "yellow", "failed": "bold red", "unreadable": "red"}


def _ago(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{max(0, seconds):.0f}s ago"


def _status(run: RunSummary, now: float) -> Text:
    text = Text(run.status, _STYLE.get(run.status, ""))
    if run.running:
        text.append(f" · running (pid {run.holder})", "cyan")
    elif run.resumable:
        text.append(" · resumable", "dim")
    if run.active(now):
        text.append(f" · active {_ago(now - run.last_activity)}", "cyan")
    return text


@click.command()
@click.argument(
    "results_dir",
    metavar="[RESULTS_DIR]",
    required=False,
    default="results",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option("--config", metavar="TEXT", help="Only runs with a config whose name contains TEXT.")
@click.option("--target", metavar="TEXT", help="Only runs with a target whose spec contains TEXT.")
@click.option("--status", type=click.Choice(STATUSES), help="Only runs with this status.")
@click.option(
    "--since", metavar="DATE", help="Only runs created on or after DATE (ISO, 2025-06-01)."
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many (the newest).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run, a line each.")
def runs(results_dir: Path, config, target, status, since, limit, as_json) -> None:
    """List the runs in RESULTS_DIR (default ./results), newest first: date, configs, targets,
    turns, cost and status (complete; partial or failed: resumable with run --resume)."""
    found = find_runs(results_dir, config=config, target=target, status=status, since=since)
    if limit:
        found = found[:limit]
    if as_json:
        for run in found:
            click.echo(json.dumps(run.to_dict(), ensure_ascii=False))
        return
    if not found:
        click.echo(
            f"no runs in {results_dir}" + (" match" if any((config, target, status, since)) else "")
        )
        return
    now = time.time()
    table = Table(title=f"{len(found)} runs in {results_dir}", title_justify="left")
    for name in ("date", "run", "configs", "targets", "turns", "cost", "status"):
        table.add_column(name, justify="right" if name in ("turns", "cost") else "left")
    for run in found:
        cost = "–" if run.cost_usd is None else f"${run.cost_usd:.4f}"
        table.add_row(
            run.created_at.replace("T", " ")[:16] or "?",
            Text(run.path + (" (matrix)" if run.kind == "matrix" else "")),
            Text(", ".join(run.configs) or (run.problem or "")),
            Text(", ".join(run.targets)),
            f"{run.turns}/{run.planned_turns}",
            cost,
            _status(run, now),
        )
    table_console().print(table)
