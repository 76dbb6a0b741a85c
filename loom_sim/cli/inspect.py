"""``loom-sim diagram`` and ``loom-sim trace``: look inside the machine and a rollout."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import msgspec

from loom_sim.cli.options import RegistryChoice
from loom_sim.core.messages import MESSAGE_TYPES, load_message_types
from loom_sim.core.text import json_printable
from loom_sim.errors import LoomError
from loom_sim.machines.engine import MACHINES
from loom_sim.store.artifacts import TRACE_FILE
from loom_sim.store.trace import read_trace, summarize


@click.command()
@click.option("--machine", type=RegistryChoice.of(MACHINES), default="rollout", show_default=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot", "svg"]),
    default="mermaid",
    show_default=True,
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file."
)
def diagram(machine: str, fmt: str, output: Path | None) -> None:
    """Export a state machine, drawn by transitions: mermaid text, Graphviz dot source, or svg
    (needs Graphviz's dot program)."""
    text = MACHINES.get(machine).diagram(fmt)
    if output:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


def _trace_file(path: Path) -> Path:
    if path.is_file():
        return path
    if (path / TRACE_FILE).is_file():
        return path / TRACE_FILE
    # a run's rollouts (rollout_000...) or a harness run's sessions (<scenario>-1...)
    rollouts = sorted(p.name for p in path.iterdir() if (p / TRACE_FILE).is_file())
    if len(rollouts) == 1:
        return path / rollouts[0] / TRACE_FILE
    if rollouts:
        raise LoomError(
            f"{path} holds several rollouts; name one: {', '.join(str(path / r) for r in rollouts)}"
        )
    raise LoomError(
        f"{path}: no {TRACE_FILE} here (give a rollout or session directory, e.g. "
        "RUN_DIR/rollout_000)"
    )


@click.command()
@click.argument("path", metavar="ROLLOUT_DIR", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--actor",
    help="Only messages from or to this actor (persona, interlocutor, monitor, judge, rollout).",
)
@click.option("--type", "type_", help="Only this message type (Speak, Utterance, Verdict, ...).")
@click.option("--turn", type=click.IntRange(min=1), help="Only this turn (counted from 1).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the matching envelopes as JSON lines (as recorded: turns counted from 0).",
)
def trace(
    path: Path, actor: str | None, type_: str | None, turn: int | None, as_json: bool
) -> None:
    """Show who said what to whom in a rollout, message by message."""
    file = _trace_file(path)
    envelopes = read_trace(file)
    if actor is not None:
        actors = sorted({e.sender for e in envelopes} | {e.recipient for e in envelopes})
        if actor not in actors:
            raise LoomError(
                f"{file}: no actor {actor!r} in this trace; its actors: {', '.join(actors)}"
            )
    if type_ is not None:
        load_message_types()
        types = sorted(MESSAGE_TYPES)
        if type_.lower() not in {t.lower() for t in types}:
            raise LoomError(f"--type {type_}: no such message type; the types: {', '.join(types)}")
    selected = [
        e
        for e in envelopes
        if (actor is None or actor in (e.sender, e.recipient))
        and (type_ is None or type(e.body).__name__.lower() == type_.lower())
        and (turn is None or e.turn == turn - 1)
    ]
    if as_json:
        encoder = msgspec.json.Encoder()
        for envelope in selected:
            click.echo(json_printable(encoder.encode(envelope).decode()))
        return
    from rich.table import Table

    from loom_sim.cli.console import safe_console

    table = Table(title=f"{len(selected)} of {len(envelopes)} messages", show_lines=False)
    for column in ("id", "turn", "from", "to", "type", "re", "content"):
        table.add_column(column, overflow="fold")
    for e in selected:
        table.add_row(
            str(e.id),
            str(e.turn + 1),
            e.sender,
            e.recipient,
            type(e.body).__name__,
            str(e.reply_to or ""),
            summarize(e),
        )
    safe_console(width=max(120, shutil.get_terminal_size().columns)).print(table)
