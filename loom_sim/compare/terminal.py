"""The comparison in the terminal: the same tables and sentences as the Markdown, as rich
tables (one per config), the differences beyond noise in bold."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from loom_sim.compare.markdown import scorer_rows

__all__ = ["render_terminal"]


def render_terminal(data: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    for notice in data["notices"]:
        parts.append(Text(f"note: {notice}", "bold yellow"))
    for config in data["configs"]:
        header, rows = scorer_rows(data, config)
        table = Table(title=config, title_justify="left", title_style="bold")
        for k, name in enumerate(header):
            table.add_column(name, justify="left" if k == 0 else "right", overflow="fold")
        for row in rows:
            styled = [
                Text(
                    cell,
                    "bold" if "beyond noise" in cell else "dim" if cell.startswith("–") else "",
                )
                for cell in row
            ]
            table.add_row(*styled)
        parts.append(table)
    if data["differences"]:
        parts.append(Text("differences", "bold underline"))
        for d in data["differences"]:
            prefix = f"{d['config']}: " if len(data["configs"]) > 1 else ""
            style = "bold" if d["within_noise"] is False else ""
            parts.append(Text(f"  {prefix}{d['sentence']}", style))
    return Group(*parts)


def print_terminal(data: dict[str, Any], console: Console | None = None) -> None:
    (console or Console()).print(render_terminal(data))
