"""``loom-sim report RUN_DIR``: report.json, report.md and report.html for a run.

The files go into the run directory by default, beside what they describe, so a run dir
copied elsewhere carries its report. The paths are printed, one a line, for scripts.
"""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.errors import LoomError
from loom_sim.store.artifacts import TRANSCRIPT_FILE
from loom_sim.store.run_file import RUN_FILE


@click.command()
@click.argument(
    "run_dir", metavar="RUN_DIR", type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the three files here instead of into RUN_DIR.",
)
def report(run_dir: Path, output: Path | None) -> None:
    """Write report.json (every number), report.md (a one-minute summary) and report.html
    (self-contained, with charts) for a run."""
    from loom_sim.cli import matrix
    from loom_sim.compare.headline import print_headline
    from loom_sim.rollout.report import write_report
    from loom_sim.store.matrix_file import is_matrix

    if not run_dir.exists():
        raise LoomError(f"{run_dir}: no such directory")
    if is_matrix(run_dir):  # every arm's report, and the matrix's: a column per target
        for path in matrix.report_matrix(run_dir, output):
            click.echo(str(path))
        print_headline(run_dir)
        return
    if not (run_dir / RUN_FILE).is_file() and (
        (run_dir / TRANSCRIPT_FILE).is_file() or (run_dir.parent / RUN_FILE).is_file()
    ):
        raise LoomError(
            f"{run_dir}: a rollout, not a run; give the run directory: {run_dir.parent}"
        )
    for path in write_report(run_dir, output):
        click.echo(str(path))
    print_headline(run_dir)
