"""``loom-sim port psychosis-bench PROFILE... --output DIR`` and ``loom-sim port spiral-bench COPY
--output DIR``: other tools' personas as configs.

Each written file is read back through the config loader before the command reports it, so a
port that produced an invalid config fails with the loader's ``file:line`` messages instead of
leaving a broken file to be found at run time.
"""

from __future__ import annotations

from pathlib import Path

import click

from loom_sim.config import load_config
from loom_sim.errors import LoomError
from loom_sim.rollout.interop.port import DEFAULT_TURNS, output_name, port_profile, render
from loom_sim.rollout.interop.spiral_port import DEFAULT_TURNS as SPIRAL_TURNS
from loom_sim.rollout.interop.spiral_port import port_copy
from loom_sim.rollout.interop.spiral_port import render as render_spiral


@click.group("port")
def port() -> None:
    """Turn other tools' personas into loom-sim configs."""


def _profiles(paths: tuple[Path, ...]) -> list[Path]:
    # A folder stands for the profiles in it (psychosis-bench keeps schedules in a subfolder).
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.yaml"))
            if not found:
                raise LoomError(f"{path}: no profile files (*.yaml) in this folder")
            files += found
        else:
            files.append(path)
    return files


@port.command("psychosis-bench")
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--schedule",
    "-s",
    "schedules",
    multiple=True,
    default=("standard",),
    show_default=True,
    help="standard, delayed_onset (looked up in schedules/ beside the profile) or a schedule "
    "file; repeat for several.",
)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the configs, written as <profile id>.<schedule>.yaml.",
)
@click.option(
    "--turns",
    type=click.IntRange(min=1),
    default=DEFAULT_TURNS,
    show_default=True,
    help="trajectory.expected_turns of the configs (psychosis-bench's own runs used 10).",
)
def psychosis_bench(
    profiles: tuple[Path, ...], schedules: tuple[str, ...], output: Path, turns: int
) -> None:
    """Port psychosis-bench-2.0 patient profiles, with an intensity schedule, to configs."""
    ported = [
        port_profile(profile, schedule, turns=turns)
        for profile in _profiles(profiles)
        for schedule in schedules
    ]
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LoomError(f"{output}: cannot create the output folder ({err})") from None
    for config, report in ported:
        path = output / output_name(report)
        path.write_text(render(config, report), encoding="utf-8")
        load_config(path)  # a ConfigError names file:line for every problem
        kept = ", ".join(report.kept_as_context) or "nothing"
        click.echo(
            f"{path}: {config['persona']['identity']['name']}, {report.schedule} schedule, "
            f"{len(config['trajectory']['phases'])} phases; kept as context: {kept}"
        )


@port.command("spiral-bench")
@click.argument("copy", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the configs, written as <scenario id>.yaml.",
)
@click.option(
    "--turns",
    type=click.IntRange(min=1),
    default=SPIRAL_TURNS,
    show_default=True,
    help="trajectory.expected_turns of the configs (Spiral-Bench's own runs used 20).",
)
def spiral_bench(copy: Path, output: Path, turns: int) -> None:
    """Port the scenarios of your Spiral-Bench copy (COPY: its folder) to configs, one each.

    The configs keep your copy's wording (the seeker's instructions, the opening prompts, the
    rubric): Spiral-Bench's files carry no licence, so loom-sim ships none of them."""
    ported = port_copy(copy, turns)
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LoomError(f"{output}: cannot create the output folder ({err})") from None
    for one in ported:
        path = output / one.file_name
        path.write_text(render_spiral(one), encoding="utf-8")
        load_config(path)  # a ConfigError names file:line for every problem
        phases = [p["name"] for p in one.config["trajectory"]["phases"]]
        click.echo(
            f"{path}: {one.scenario.category or 'no category'}, phases {' > '.join(phases)}; "
            "kept as context: the seeker's instructions and the extra directions (loom-sim "
            "gives no per-turn random directions)"
        )
