"""``loom-sim import psychosis-bench FILE...``: other tools' transcripts as loom-sim runs."""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.errors import LoomError
from loom_sim.rollout.interop.importer import import_transcripts


@click.group("import")
def import_() -> None:
    """Turn other tools' transcripts into run directories that score and report work on."""


@import_.command("psychosis-bench")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory to create.",
)
@click.option(
    "--profiles",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="psychosis-bench's profiles folder (default: found beside the results).",
)
def psychosis_bench(paths: tuple[Path, ...], output: Path, profiles: Path | None) -> None:
    """Import psychosis-bench result files (or folders of them)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.json") if p.name != "run_config.json")
        else:
            files.append(path)
    if not files:
        raise LoomError("no psychosis-bench result files found in " + ", ".join(map(str, paths)))
    for run in import_transcripts(files, output, profiles):
        click.echo(
            f"{run.dir}: {run.profile} ({run.schedule} schedule), {len(run.rollouts)} rollouts"
        )
        for index, source in enumerate(run.rollouts):
            click.echo(f"  rollout_{index:03d} <- {source}")
        for note in run.notes:
            click.echo(f"  note: {note}")
    click.echo(
        "score with: loom-sim score RUN_DIR --judge-model SPEC; then: loom-sim report RUN_DIR"
    )
