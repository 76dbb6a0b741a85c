"""The comparison as one self-contained HTML file: the tables, and per-turn curves of every
scorer with one line per target, drawn here as inline SVG.

Self-contained and script-free like the single-run report (mailed, archived, opened offline;
a page that fetches nothing leaks nothing). The web viewer shows the same body inside its own
page (:func:`compare_body`). Names (configs, targets, scorers) are the only text and are
escaped; coordinates are rounded so the same data draws the same bytes.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup, escape

from loom_sim.compare.markdown import (
    BOARD_NOTE,
    board_left_out,
    board_rows,
    cell_text,
    difference_text,
    no_differences,
    num,
    scorer_rows,
)
from loom_sim.compare.spiral import AGREEMENT_NOTE as SPIRAL_AGREEMENT_NOTE
from loom_sim.compare.spiral import NOTE as SPIRAL_NOTE
from loom_sim.compare.spiral import spiral_agreement_rows, spiral_rows
from loom_sim.core.html import html_environment

__all__ = ["PALETTE", "compare_body", "curve_chart", "render_html", "stylesheet"]

#: Line colours by target position (colour-blind-safe: Okabe and Ito's palette).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
#: Dashes by target position, so a line drawn over an identical one still shows.
DASHES = ("", "6 3", "2 3", "8 3 2 3")


def _n(x: float) -> str:
    return f"{x:.1f}"


def curve_chart(title: str, lines: dict[str, list[float | None]], colors: dict[str, str]) -> Markup:
    """One scorer's per-turn curves on one config, a line per target. The y axis spans 0..1
    unless the values leave it (a scorer on another scale), so curves stay comparable."""
    width, height, left, top, right, bottom = 330, 150, 30, 16, 8, 20
    turns = max((len(v) for v in lines.values()), default=0)
    values = [x for v in lines.values() for x in v if x is not None]
    lo = min([0.0, *values])
    hi = max([1.0, *values])
    span_y = (hi - lo) or 1.0

    def x(turn: float) -> float:
        return left + (width - left - right) * (turn / max(1, turns - 1))

    def y(value: float) -> float:
        return top + (height - top - bottom) * (1 - (value - lo) / span_y)

    parts = [f'<text x="{left}" y="11" class="chart-title">{escape(title)}</text>']
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(
            f'<line x1="{left}" y1="{_n(y(v))}" x2="{width - right}" y2="{_n(y(v))}" '
            'stroke="#e3e3e3"/>'
            f'<text x="{left - 4}" y="{_n(y(v) + 3)}" text-anchor="end" class="tick">'
            f"{v:g}</text>"
        )
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 10**9) if turns / s <= 8)
    # turns are read counted from 1: ticks at turn 1 and at each multiple of the step
    for shown in dict.fromkeys([1, *range(step, turns + 1, step)]):
        parts.append(
            f'<text x="{_n(x(shown - 1))}" y="{height - 6}" text-anchor="middle" class="tick">'
            f"{shown}</text>"
        )
    for k, (target, series) in enumerate(lines.items()):
        color = colors.get(target, "#444")
        dash = DASHES[k % len(DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        runs: list[list[str]] = [[]]
        for turn, value in enumerate(series):
            if value is None:
                runs.append([])
            else:
                runs[-1].append(f"{_n(x(turn))},{_n(y(value))}")
        for run in runs:
            if len(run) == 1:
                cx, cy = run[0].split(",")
                parts.append(
                    f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{color}">'
                    f"<title>{escape(target)}</title></circle>"
                )
            elif run:
                parts.append(
                    f'<polyline fill="none" stroke="{color}" stroke-width="1.8"{dashed} '
                    f'points="{" ".join(run)}" class="curve" data-target="{escape(target)}">'
                    f"<title>{escape(target)}</title></polyline>"
                )
    label = f"{title}: mean value by turn, one line per target"
    return Markup(
        f'<svg class="chart" role="img" aria-label="{escape(label)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f"<title>{escape(label)}</title>" + "".join(parts) + "</svg>"
    )


@cache
def _environment() -> jinja2.Environment:
    return html_environment(
        "loom_sim.compare",
        filters={"cell": cell_text, "diff": difference_text, "num": num},
        keep_trailing_newline=True,
    )


def _charts(data: dict[str, Any], colors: dict[str, str]) -> list[dict[str, Any]]:
    charts = []
    for scorer in data["scorers"]:
        for config, lines in data["curves"].get(scorer, {}).items():
            if any(v is not None for series in lines.values() for v in series):
                title = f"{scorer} · {config}" if len(data["curves"][scorer]) > 1 else scorer
                charts.append(
                    {"scorer": scorer, "config": config, "svg": curve_chart(title, lines, colors)}
                )
    return charts


def _context(data: dict[str, Any]) -> dict[str, Any]:
    colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(data["targets"])}
    tables = [
        (config, *scorer_rows(data, config, against_first=True)) for config in data["configs"]
    ]
    board = data.get("board")
    spiral = data.get("spiral")
    return {
        "data": data,
        "tables": tables,
        "charts": _charts(data, colors),
        "colors": colors,
        "board": board_rows(board) if board else None,
        "board_note": BOARD_NOTE,
        "left_out": board_left_out(board) if board else [],
        "spiral": spiral_rows(spiral) if spiral else None,
        "spiral_agreement": spiral_agreement_rows(spiral)
        if spiral and spiral["agreement"]
        else None,
        "spiral_note": SPIRAL_NOTE,
        "spiral_agreement_note": SPIRAL_AGREEMENT_NOTE,
        "no_differences": no_differences(data),
    }


def compare_body(data: dict[str, Any]) -> Markup:
    """The comparison's content, for a page that has its own head (the web viewer)."""
    return Markup(_environment().get_template("compare_body.html.j2").render(**_context(data)))


@cache
def stylesheet() -> str:
    """The comparison's CSS (inlined in the file; served by the viewer)."""
    return (resources.files("loom_sim.compare") / "templates" / "compare.css").read_text("utf-8")


def render_html(data: dict[str, Any], title: str = "Comparison") -> str:
    template = _environment().get_template("compare.html.j2")
    return template.render(title=title, body=compare_body(data), css=Markup(stylesheet()))
