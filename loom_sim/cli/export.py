"""``loom-sim export RUN_DIR…``: one row per turn and one per rollout, as CSV or JSONL.

The columns are documented in docs/workbench.md; the same columns in both formats.
"""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.cli.options import json_format
from loom_sim.errors import LoomError
from loom_sim.runs.export import FORMATS, rollout_rows, turn_rows, write_rows
from loom_sim.runs.load import load_results


@click.command()
@click.argument(
    "run_dirs",
    metavar="RUN_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="JSON Lines (one object a row, .jsonl) instead of CSV.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="csv",
    hidden=True,  # --format jsonl: the older spelling of --json, still accepted
)
@click.option(
    "--rows",
    type=click.Choice(["turns", "rollouts", "both"]),
    default="both",
    show_default=True,
    help="Which table: a row per turn, a row per rollout, or both files.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    help="A folder for turns.<fmt> and rollouts.<fmt> (default: the first RUN_DIR); with "
    "--rows turns|rollouts, a file, or - for stdout.",
)
def export(
    run_dirs: tuple[Path, ...], as_json: bool, fmt: str, rows: str, output: Path | None
) -> None:
    """Write a run's turns and rollouts as flat rows for pandas or a spreadsheet: config,
    target, turn, phase, intensities, every score (with its state), tokens and cost."""
    fmt = "jsonl" if json_format(fmt, as_json, "jsonl") else "csv"
    if output is not None and str(output) == "-" and rows == "both":
        raise LoomError(
            "-o - writes one table to stdout: add --rows turns or --rows rollouts "
            "(or give a folder for both files)"
        )
    results = [load_results(d) for d in run_dirs]
    tables = {"turns": turn_rows, "rollouts": rollout_rows}
    wanted = ["turns", "rollouts"] if rows == "both" else [rows]
    for name in wanted:
        columns, found = tables[name](results)
        if rows != "both" and output is not None and str(output) == "-":
            write_rows(columns, found, None, fmt)
            continue
        if rows != "both" and output is not None and not output.is_dir():
            path = output
        else:
            folder = output if output is not None else run_dirs[0]
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{name}.{fmt}"
        count = write_rows(columns, found, path, fmt)
        click.echo(f"{path} ({count} rows, {len(columns)} columns)")
