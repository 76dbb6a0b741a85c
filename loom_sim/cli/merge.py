"""``loom-sim merge SHARD_DIR... -o RUN_DIR``: the shards of a run (``run --shard k/N``)
joined into one run, then reported as if it had run at once."""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.core.lock import hold
from loom_sim.store.merge import merge_shards


@click.command()
@click.argument(
    "shard_dirs",
    metavar="SHARD_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The merged run's folder (new).",
)
@click.option("--no-report", is_flag=True, help="Skip the report of the merged run.")
def merge(shard_dirs: tuple[Path, ...], output: Path, no_report: bool) -> None:
    """Join the folders of a run's shards (run --shard k/N, each with the same --seed) into
    one run directory: every cell copied from the shard that ran it."""
    ctx = click.get_current_context()
    for shard_dir in shard_dirs:  # a shard still running (or resumed) is not merged half-done
        ctx.with_resource(hold(shard_dir))
    merged = merge_shards(list(shard_dirs), output, lambda folder: ctx.with_resource(hold(folder)))
    click.echo(f"merged {len(shard_dirs)} of {merged.shards} shards: {merged.cells} cells")
    if merged.missing_shards or merged.missing_cells:
        gone = ", ".join(f"{k}/{merged.shards}" for k in merged.missing_shards)
        what = f"shards {gone} were not given" if gone else ""
        if merged.missing_cells:
            what += ("; " if what else "") + f"{len(merged.missing_cells)} cells never started"
        click.echo(
            f"note: the merged run is partial ({what}); finish it with: "
            f"loom-sim run --resume {output}",
            err=True,
        )
    if not no_report and merged.cells:
        for path in _report(output, merged.kind):
            click.echo(f"report: {path}")
    click.echo(f"results in {output}")


def _report(run_dir: Path, kind: str) -> list[Path]:
    if kind == "matrix":
        from loom_sim.cli.matrix import report_matrix

        return report_matrix(run_dir)
    from loom_sim.rollout.report import write_report

    return write_report(run_dir)
