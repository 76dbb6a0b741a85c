"""``loom-sim schema``: the config's JSON Schema, for editors that check and complete YAML."""

from __future__ import annotations

import json

import click

from loom_sim.config.json_schema import json_schema


@click.command()
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to this file."
)
def schema(output: str | None) -> None:
    """Print the JSON Schema of loom-sim configs."""
    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
