"""The model under evaluation, by turn, as an inline SVG chart per rollout.

DCS and HES (0-2, lower is better) are lines over the turns, SIS a green mark above the turns
whose reply pointed to help; turns before a score's activation are shaded grey (not
applicable: no line, not a 0), a turn the judge could not score is a red ``×`` on the axis,
and an imported file's own scores (the reference) are dashed lines of the same colours, with
hollow SIS marks. Like the rest of report.html: no script, nothing fetched, every text
escaped, coordinates rounded so the same data draws the same bytes.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

COLORS = {"dcs": "#c0392b", "hes": "#d9822b", "sis": "#2a9d5c", "grid": "#e3e3e3"}
WIDTH, HEIGHT = 720, 170
LEFT, RIGHT, TOP, BOTTOM = 30, 12, 22, 20


def _n(x: float) -> str:
    return f"{x:.1f}"


def _x(index: int, turns: int) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * (index / max(1, turns - 1))


def _y(value: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - max(0.0, min(2.0, value)) / 2)


def _line(values: list[float | None], turns: int, color: str, dash: str, label: str) -> list[str]:
    """A polyline broken wherever there is no value (not applicable or failed)."""
    parts, run = [], []
    for index, value in enumerate([*values, None]):
        if value is not None:
            run.append(f"{_n(_x(index, turns))},{_n(_y(value))}")
            continue
        if len(run) == 1:
            x, y = run[0].split(",")
            parts.append(f'<circle cx="{x}" cy="{y}" r="2" fill="{color}"/>')
        elif run:
            extra = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.8"{extra} '
                f'points="{" ".join(run)}"><title>{escape(label)}</title></polyline>'
            )
        run = []
    return parts


def rollout_chart(rollout: dict[str, Any], names: list[str]) -> Markup | None:
    turns = rollout["by_turn"]
    if len(turns) < 2 or not names:  # one turn is a table row, not a chart
        return None
    count = len(turns)
    parts = []
    x0, x1 = _n(LEFT), _n(WIDTH - RIGHT)
    for value in (0.0, 1.0, 2.0):
        y = _n(_y(value))
        parts.append(f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="{COLORS["grid"]}"/>')
        parts.append(f'<text x="{_n(LEFT - 4)}" y="{_n(_y(value) + 3)}" class="tick" ')
        parts[-1] += f'text-anchor="end">{value:g}</text>'
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 10**9) if count / s <= 12)
    for index in range(0, count, step):
        parts.append(
            f'<text x="{_n(_x(index, count))}" y="{_n(HEIGHT - BOTTOM + 13)}" class="tick" '
            f'text-anchor="middle">{turns[index]["turn"]}</text>'
        )
    half = (WIDTH - LEFT - RIGHT) / max(1, count - 1) / 2
    for index, turn in enumerate(turns):
        waiting = [n for n in names if turn["scores"].get(n, {}).get("state") == "not_applicable"]
        if waiting:
            x = max(LEFT, _x(index, count) - half)
            width = min(WIDTH - RIGHT, _x(index, count) + half) - x
            label = ", ".join(n.upper() for n in waiting) + " not applicable yet"
            parts.append(
                f'<rect x="{_n(x)}" y="{_n(TOP)}" width="{_n(width)}" '
                f'height="{_n(_y(0) - TOP)}" fill="#f2f2f2" class="not-applicable">'
                f"<title>turn {turn['turn']}: {escape(label)}</title></rect>"
            )
    for name in ("dcs", "hes"):
        if name not in names:
            continue
        ours = [t["scores"][name]["value"] for t in turns]
        parts += _line(ours, count, COLORS[name], "", f"{name.upper()}, loom-sim's judge")
        if turns[0]["reference"]:
            theirs = [t["reference"][name]["value"] for t in turns]
            parts += _line(theirs, count, COLORS[name], "4 3", f"{name.upper()}, reference judge")
    for index, turn in enumerate(turns):
        x = _x(index, count)
        for name in names:
            cell = turn["scores"].get(name, {})
            if cell.get("state") == "failed":
                parts.append(
                    f'<text x="{_n(x)}" y="{_n(_y(0) - 2)}" text-anchor="middle" '
                    f'class="failed" fill="#b0271b">×<title>turn {turn["turn"]}: '
                    f"{escape(name.upper())} failed: {escape(cell.get('error', ''))}</title></text>"
                )
            elif name in ("dcs", "hes") and cell.get("state") == "scored":
                parts.append(
                    f'<circle cx="{_n(x)}" cy="{_n(_y(cell["value"]))}" r="2.6" '
                    f'fill="{COLORS[name]}"><title>turn {turn["turn"]}: {name.upper()} '
                    f"{cell['value']:g}</title></circle>"
                )
        sis = turn["scores"].get("sis", {})
        if sis.get("state") == "scored" and sis.get("value") == 1:
            parts.append(
                f'<path d="M{_n(x - 4)},{_n(TOP - 12)} L{_n(x + 4)},{_n(TOP - 12)} '
                f'L{_n(x)},{_n(TOP - 5)} Z" fill="{COLORS["sis"]}" class="sis">'
                f"<title>turn {turn['turn']}: SIS 1, pointed to help</title></path>"
            )
        theirs = (turn["reference"] or {}).get("sis", {})
        if theirs.get("state") == "scored" and theirs.get("value") == 1:
            parts.append(
                f'<path d="M{_n(x - 4)},{_n(TOP - 21)} L{_n(x + 4)},{_n(TOP - 21)} '
                f'L{_n(x)},{_n(TOP - 14)} Z" fill="none" stroke="{COLORS["sis"]}" '
                f'class="sis-reference"><title>turn {turn["turn"]}: SIS 1 from the '
                "reference judge</title></path>"
            )
    label = f"{rollout['rollout']}: DCS and HES by turn, SIS marks"
    return Markup(
        f'<svg class="chart timeline" role="img" aria-label="{escape(label)}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}">'
        f"<title>{escape(label)}</title>" + "".join(parts) + "</svg>"
    )


def target_charts(section: dict[str, Any] | None) -> dict[str, Markup]:
    """Rollout -> its chart, for the rollouts with turns."""
    if not section:
        return {}
    charts = {}
    for rollout in section["rollouts"]:
        chart = rollout_chart(rollout, section["safety"])
        if chart is not None:
            charts[rollout["rollout"]] = chart
    return charts
