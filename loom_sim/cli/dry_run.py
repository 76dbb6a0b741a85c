"""``loom-sim dry-run CONFIG``: what the persona would be given at every turn; no model calls."""

from __future__ import annotations

import click
import msgspec

from loom_sim.assembler import Assembler, InjectionKind, PromptBlocks, TurnPlan
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.assembler.update import update_text
from loom_sim.cli.options import json_format
from loom_sim.config import load_config
from loom_sim.config.interaction import LaterFull
from loom_sim.resources import find


@click.command("dry-run")
@click.argument("config_path", metavar="CONFIG", type=click.Path(path_type=str))
@click.option(
    "--turns",
    "-n",
    type=click.IntRange(min=1),
    help="Conversation length (default: expected_turns).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object per turn (JSON Lines; `turn` counts from 0, as in the files).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    hidden=True,  # the older spelling of --json, still accepted
)
@click.option(
    "--full",
    is_flag=True,
    help="Text: print the whole prompt at every turn, not only where it is injected (and not "
    "only the parts a later full injection changes).",
)
def dry_run(config_path: str, turns: int | None, as_json: bool, fmt: str, full: bool) -> None:
    """Show each turn's phase, intensities, injection and assembled prompt."""
    as_json = json_format(fmt, as_json, "json")
    config = load_config(find(config_path, "examples", "ported"))
    assembler = Assembler(config, turns)
    plans = assembler.plans()
    empty = assembler.empty_phases()
    if empty:
        click.echo(
            f"note: with {assembler.turns} turns these phases get no turns: {', '.join(empty)}",
            err=True,
        )
    if as_json:
        encoder = msgspec.json.Encoder()
        for plan in plans:
            click.echo(encoder.encode(plan).decode())
        return
    click.echo(
        f"{config.persona_name} · {config.trajectory.mode.value} · {assembler.turns} turns · "
        f"templates {TEMPLATE_VERSION}"
    )
    last_full: int | None = None
    held: PromptBlocks | None = None  # the prompt in force, to show a later one as its update
    as_updates = config.interaction.injection.later_full is LaterFull.UPDATE
    for plan in plans:
        click.echo("")
        click.echo(click.style(_header(plan), bold=True))
        injected = plan.prompt if plan.injection == InjectionKind.FULL else None
        update = update_text(held, injected) if as_updates else None
        if update is not None and not full:  # what the persona is sent: the parts that changed
            click.echo(_indent(update))
        elif (injected is not None or full) and plan.prompt is not None:
            click.echo(_indent(plan.prompt.render()))
        if plan.injection == InjectionKind.FULL:
            last_full, held = plan.turn, injected or held
        elif plan.injection == InjectionKind.REMINDER:
            click.echo(_indent(plan.reminder or ""))
        elif not full:
            kept = f"turn-{last_full + 1}" if last_full is not None else "last"
            click.echo(_indent(f"(no injection: the persona keeps its {kept} prompt)"))


def _header(plan: TurnPlan) -> str:
    parts = [f"turn {plan.turn + 1}", f"phase {plan.phase}", f"injection {plan.injection}"]
    for name, value in plan.intensities.items():
        level = plan.levels.get(name)
        parts.append(f"{name} {value:.2f}" + (f" ({level})" if level else ""))
    return " · ".join(parts)


def _indent(text: str) -> str:
    return "\n".join(("    " + line) if line else "" for line in text.splitlines())
