"""``loom-sim plugins``: every registered provider, scripted model, scorer, monitor, actor kind,
target adapter, harness stop rule, machine and executor, with where it comes from — so a
package's plug-ins can be seen to be found."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import click

from loom_sim.executors import EXECUTORS
from loom_sim.harness.stop import RULES as HARNESS_STOPS
from loom_sim.machines.engine import MACHINES
from loom_sim.models.providers import PROVIDERS
from loom_sim.models.scripted import SCRIPTS
from loom_sim.plugins import Plugin
from loom_sim.plugins.actors import ACTORS
from loom_sim.plugins.adapters import ADAPTERS
from loom_sim.plugins.monitors import MONITORS
from loom_sim.plugins.scorers import SCORERS


def _origin(obj: Any) -> str:
    return getattr(obj, "__module__", "") or "?"


def sections() -> list[tuple[str, Iterable[Plugin], Callable[[Any], str], Callable[[Any], str]]]:
    """(title, entries, detail, origin) per kind of plug-in."""
    return [
        (
            "providers (model specs provider/name)",
            PROVIDERS,
            lambda p: f"key {p.key_env}" if p.key_env else "no key",
            lambda p: _origin(p.make),
        ),
        ("scripted models (scripted/<name>)", SCRIPTS, lambda s: "", lambda s: _origin(s.respond)),
        (
            "scorers (evaluation.scoring)",
            SCORERS,
            lambda s: (
                ("judge" if s.needs_judge else "deterministic")
                + f", {s.aggregation}"
                + (", yes/no per turn (a rate)" if s.kind == "rate" else "")
                + (
                    f", model under evaluation, {s.scale[0]:g}-{s.scale[1]:g}"
                    if s.subject == "target"
                    else ""
                )
            ),
            lambda s: _origin(s.scorer),
        ),
        (
            "monitors (every persona draft; settings in interaction.monitors unless named)",
            MONITORS,
            lambda m: (
                f"settings in {m.config_key}"
                if m.section is not None
                else (f"settings {m.settings.__name__}" if m.settings else "")
            ),
            lambda m: _origin(m.monitor),
        ),
        (
            "actor kinds (run --responder for responders)",
            ACTORS,
            lambda a: f"responder, calls the {a.responder.model_role} model" if a.responder else "",
            lambda a: _origin(a.build),
        ),
        (
            "target adapters (loom-sim harness --target KIND:ADDRESS)",
            ADAPTERS,
            lambda a: f"settings {a.settings.__name__}",
            lambda a: _origin(a.open),
        ),
        (
            "harness stop rules (checked after every turn, by order)",
            HARNESS_STOPS,
            lambda r: f"order {r.order}",
            lambda r: _origin(r.check),
        ),
        (
            "machines (loom-sim diagram)",
            MACHINES,
            lambda m: f"{len(m.states)} states",
            lambda m: "",
        ),
        ("executors (run --executor)", EXECUTORS, lambda e: "", lambda e: _origin(e.open)),
    ]


@click.command()
def plugins() -> None:
    """List the registered plug-ins of every kind, with where each comes from."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(100, console_width()))
    for title, entries, detail, origin in sections():
        table = Table(title=title, title_justify="left", show_lines=False)
        for column in ("name", "what", "detail", "from"):
            table.add_column(column, overflow="fold")
        for entry in entries:
            table.add_row(entry.name, entry.summary, detail(entry), origin(entry))
        console.print(table)


def markdown() -> str:
    """Every registry as Markdown tables (``docs/plugins.md`` embeds this; a test keeps it
    current). Only loom-sim's own plug-ins are there: the docs describe the package."""
    out: list[str] = []
    for title, entries, detail, origin in sections():
        own = [e for e in entries if origin(e).startswith("loom_sim") or not origin(e)]
        out += [f"### {title}", "", "| name | what | detail |", "| --- | --- | --- |"]
        out += [f"| `{e.name}` | {_cell(e.summary)} | {_cell(detail(e))} |" for e in own]
        if not own:
            out[-2:] = ["None of loom-sim's own: a package or your code registers them."]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def console_width() -> int:
    import shutil

    return shutil.get_terminal_size((100, 20)).columns if sys.stdout.isatty() else 120
