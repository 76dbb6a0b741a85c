"""The comparison in the terminal: the same tables and sentences as the Markdown, as rich
tables (one per config), the differences beyond noise in bold."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from loom_sim.compare.markdown import scorer_rows

__all__ = ["render_terminal"]


def _styled(cell: str) -> Text:
    """A cell on two lines: the value, then its interval and count (dim), so a table of
    several targets fits a terminal."""
    if cell.startswith("–") or not cell:
        return Text(cell, "dim")
    value, _, rest = cell.partition(" ")
    text = Text(value, "bold" if "beyond noise" in cell else "")
    if rest:
        text.append("\n" + rest, "bold" if "beyond noise" in cell else "dim")
    return text


def render_terminal(data: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    for notice in data["notices"]:
        parts.append(Text(f"note: {notice}", "bold yellow"))
    for config in data["configs"]:
        header, rows = scorer_rows(data, config)
        table = Table(title=config, title_justify="left", title_style="bold", show_lines=True)
        for k, name in enumerate(header):
            # With two targets the last column is "B − A": named short, the sentences say which.
            title = "difference" if k == 3 and "−" in name else name
            table.add_column(title, justify="left" if k == 0 else "right", overflow="fold")
        for k, row in enumerate(rows):
            cells = [Text(row[0]), *(_styled(cell) for cell in row[1:])]
            table.add_row(*cells, end_section=k == len(rows) - 1)
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
