"""``loom-sim validate FILE...``: every problem in every file, located, or a one-line summary."""

from __future__ import annotations

import click

from loom_sim.config import ConfigError, LoomConfig, load_config
from loom_sim.errors import LoomError
from loom_sim.resources import find


def summary(config: LoomConfig) -> str:
    trajectory = config.trajectory
    turns = f"{trajectory.expected_turns} turns" if trajectory.expected_turns else "no fixed length"
    dims = ", ".join(trajectory.dimensions) or "none"
    return (
        f"{config.persona_name}; {trajectory.mode.value}, {turns}; "
        f"{len(trajectory.phases)} phases; {len(trajectory.dimensions)} dimensions ({dims})"
    )


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
def validate(files: tuple[str, ...]) -> None:
    """Check config files (or shipped examples by name); print each problem as
    file:line:column: field: what is wrong."""
    failed = 0
    problems = 0
    for path in files:
        try:
            config = load_config(find(path, "examples", "ported"))
        except ConfigError as err:
            failed += 1
            problems += len(err.issues)
            for issue in err.issues:
                click.echo(click.style(issue.render(err.source), fg="red"))
            continue
        except LoomError as err:  # no such file, and no shipped config of that name
            failed += 1
            problems += 1
            click.echo(click.style(str(err), fg="red"))
            continue
        click.echo(f"{path}: ok — {summary(config)}")
    if failed:
        noun = "problem" if problems == 1 else "problems"
        click.echo(f"{failed} of {len(files)} config(s) invalid ({problems} {noun})", err=True)
        raise click.exceptions.Exit(1)
