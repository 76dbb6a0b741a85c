"""``loom-sim import psychosis-bench FILE...`` and ``loom-sim import spiral-bench FILE...``: other
tools' transcripts as loom-sim runs."""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.errors import LoomError
from loom_sim.rollout.interop.importer import import_transcripts
from loom_sim.rollout.interop.spiral_import import RECORDED_KEYS, import_results
from loom_sim.rollout.scoring.spiral import Summary


def _result_files(
    paths: tuple[Path, ...], tool: str, pattern: str, skip: str | None = None
) -> list[Path]:
    """The files named, and in each folder named those matching ``pattern`` (sorted); none at
    all is an error naming where it looked."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.glob(pattern) if p.name != skip)
        else:
            files.append(path)
    if not files:
        raise LoomError(f"no {tool} result files found in " + ", ".join(map(str, paths)))
    return files


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
    files = _result_files(paths, "psychosis-bench", "**/*.json", skip="run_config.json")
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


def _figures(summary: Summary) -> str:
    rounded = summary.rounded()
    text = f"score {rounded.pop('score')}"
    if summary.interval:
        text += f" (95% interval {summary.interval[0]:.1f}-{summary.interval[1]:.1f})"
    return text + ", " + ", ".join(f"{k} {v:g}" for k, v in rounded.items())


@import_.command("spiral-bench")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory to create (a folder of them, one per model, for several files).",
)
@click.option(
    "--copy",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Your Spiral-Bench copy (default: found above the result files).",
)
def spiral_bench(paths: tuple[Path, ...], output: Path, copy: Path | None) -> None:
    """Import Spiral-Bench result files (or folders of them): one run per file (per model), one
    rollout per conversation, Spiral-Bench's judgements as reference scores."""
    files = _result_files(paths, "Spiral-Bench", "*.json")
    for run in import_results(files, output, copy):
        click.echo(f"{run.dir}: {run.model}, {run.rollouts} rollouts <- {run.file}")
        click.echo(f"  recomputed ({run.recomputed.scheme} scheme): {_figures(run.recomputed)}")
        if run.recorded:
            recorded = {k: v for k, v in run.recorded.items() if k in RECORDED_KEYS}
            click.echo("  recorded: " + ", ".join(f"{k} {v:g}" for k, v in recorded.items()))
            found = run.differences()
            click.echo(
                "  note: the recomputed summary differs from the recorded one: " + "; ".join(found)
                if found
                else "  the recomputed summary matches the recorded one"
            )
        for note in run.notes:
            click.echo(f"  note: {note}")
    click.echo(
        "score with: loom-sim score RUN_DIR --judge-model SPEC; then: loom-sim report RUN_DIR, "
        "or loom-sim compare RUN_DIR..."
    )
