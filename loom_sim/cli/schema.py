"""``loom-sim schema``: the config's JSON Schema, for editors that check and complete YAML."""

from __future__ import annotations

import json

import click

from loom_sim.config.json_schema import json_schema


@click.command()
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to this file."
)
@click.option("--pack", is_flag=True, help="The schema of scenario packs (loom-sim harness).")
def schema(output: str | None, pack: bool) -> None:
    """Print the JSON Schema of loom-sim configs (or, with --pack, of scenario packs)."""
    if pack:
        from loom_sim.harness.packs.schema import json_schema as pack_schema

        text = json.dumps(pack_schema(), indent=2, ensure_ascii=False) + "\n"
    else:
        text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
