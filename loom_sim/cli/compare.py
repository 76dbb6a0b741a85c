"""``loom-sim compare RUN_DIR…``: targets side by side, with intervals and paired differences.

Prints the tables in the terminal; ``--output DIR`` also writes report.json, report.md and
report.html (with per-turn curves) there.
"""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.compare import build_compare, parse_rate, write_compare


@click.command()
@click.argument(
    "run_dirs",
    metavar="RUN_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--rate",
    "rates",
    metavar="SCORER>=X[@K]",
    multiple=True,
    help="A rate over rollouts, with a Wilson interval: rollouts whose value passes X, or "
    "(@K) that reached it within their first K turns. Repeatable; also <=, >, <.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write report.json, report.md and report.html here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON instead.")
def compare(run_dirs: tuple[Path, ...], rates: tuple[str, ...], output, as_json) -> None:
    """Compare runs (single runs or matrices): per config and target, every scorer's mean with
    its 95% interval, and each difference between targets, paired when the same config and
    seed ran against both, with a plain sentence when it is within noise."""
    data = build_compare(list(run_dirs), [parse_rate(r) for r in rates])
    if as_json:
        from loom_sim.rollout.report import report_json

        click.echo(report_json(data), nl=False)
    else:
        from loom_sim.cli.console import table_console
        from loom_sim.compare.terminal import print_terminal

        print_terminal(data, table_console())
    if output is not None:
        names = " vs ".join(p.resolve().name for p in run_dirs)
        for path in write_compare(data, output, f"Comparison of {names}"):
            click.echo(str(path), err=True)
