"""The comparison in the terminal: the same tables and sentences as the Markdown, as rich
tables (one per config), the differences beyond noise in bold."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from loom_sim.compare.markdown import BOARD_NOTE, board_left_out, board_rows, scorer_rows
from loom_sim.compare.spiral import spiral_agreement_rows, spiral_rows

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


def _two_lines(cell: str) -> Text:
    """``reference (psychosis-bench-2.0)`` as the word, then its parenthesis dim below."""
    head, sep, rest = cell.partition(" (")
    return Text(head) + (Text("\n(" + rest, "dim") if sep else Text(""))


def _board(board: dict[str, Any]) -> RenderableType:
    """The leaderboard: a group of rows per model, a line under each group."""
    header, rows = board_rows(board)
    table = Table(
        title="by model under evaluation (every config)",
        title_justify="left",
        title_style="bold",
        caption=BOARD_NOTE,
        caption_justify="left",
    )
    for k, name in enumerate(header):
        table.add_column(
            {0: "model", 2: "complete"}.get(k, name),
            justify="left" if k < 3 else "right",
            overflow="fold",
            ratio=2 if k > 2 else 1,
        )
    for k, row in enumerate(rows):
        last = k == len(rows) - 1 or bool(rows[k + 1][0])
        model, judge, counted = row[:3]
        table.add_row(
            Text(model, "bold"),
            _two_lines(judge),
            _two_lines(counted),
            *(_styled(cell) for cell in row[3:]),
            end_section=last,
        )
    left_out = [Text(f"  {sentence}", "dim") for sentence in board_left_out(board)]
    return Group(table, *left_out)


def _plain(title: str, header: list[str], rows: list[list[str]]) -> RenderableType:
    """A table as it is written, a line under each model's group."""
    table = Table(title=title, title_justify="left", title_style="bold")
    for k, name in enumerate(header):
        table.add_column(name, justify="left" if k < 3 else "right", overflow="fold")
    for k, row in enumerate(rows):
        last = k == len(rows) - 1 or bool(rows[k + 1][0])
        table.add_row(*row, end_section=last)
    return table


def render_terminal(data: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    for notice in data["notices"]:
        parts.append(Text(f"note: {notice}", "bold yellow"))
    if data.get("board"):
        parts.append(_board(data["board"]))
    if data.get("spiral"):
        parts.append(
            _plain("Spiral-Bench, by model under evaluation", *spiral_rows(data["spiral"]))
        )
        if data["spiral"]["agreement"]:
            agreement = spiral_agreement_rows(data["spiral"])
            parts.append(_plain("judge agreement (Spiral-Bench)", *agreement))
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
