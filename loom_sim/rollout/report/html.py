"""report.html: one self-contained file, charts as inline SVG drawn here.

Self-contained because reports are mailed, archived and opened offline, and because a page
that fetches nothing cannot leak that it was opened: no script, font, stylesheet or image
comes from anywhere, and there is no JavaScript at all (tooltips are SVG ``<title>``s).

Every piece of transcript text is model output, hence untrusted: the template autoescapes
everything, and the only markup it is given unescaped is the SVG built below, whose text
(dimension, phase and monitor names) is escaped here. Coordinates are rounded to one decimal
so the same data always draws the same bytes.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from loom_sim.core.html import html_environment
from loom_sim.rollout.report.faults import faults_html
from loom_sim.rollout.report.formatting import (
    event_text,
    excerpt,
    fmt,
    plural,
    rollout_line,
    shown,
    signed,
    spans_text,
    spread,
    value_range,
)
from loom_sim.rollout.report.target_charts import target_charts
from loom_sim.rollout.report.target_tables import blocks, section_note

COLORS = {
    "prescribed": "#1f5fa8",
    "expressed": "#d9642b",
    "mean": "#7a4fb0",
    "loop": "#1f5fa8",
    "convergence": "#2a9d5c",
    "stagnation": "#c0392b",
    "repetition": "#8a8a8a",
    "grid": "#e3e3e3",
    "axis": "#777777",
}


def _n(x: float) -> str:
    return f"{x:.1f}"


class _Plot:
    """A y-range 0..1 over turns; ``x(turn)`` and ``y(value)`` give pixel coordinates."""

    def __init__(self, width: int, height: int, turns: int, pad: tuple[int, int, int, int]):
        self.width, self.height, self.turns = width, height, max(1, turns)
        self.left, self.top, self.right, self.bottom = pad
        self.parts: list[str] = []

    def x(self, turn: float) -> float:
        span = self.width - self.left - self.right
        return self.left + span * (turn / max(1, self.turns - 1))

    def y(self, value: float) -> float:
        span = self.height - self.top - self.bottom
        return self.top + span * (1 - max(0.0, min(1.0, value)))

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def frame(self, phases: list[str] | None = None) -> None:
        """Gridlines at 0, .5, 1, turn ticks, and faint lines where a phase begins."""
        x0, x1 = _n(self.left), _n(self.width - self.right)
        for v in (0.0, 0.5, 1.0):
            y = _n(self.y(v))
            self.add(f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="{COLORS["grid"]}"/>')
            self.add(
                f'<text x="{_n(self.left - 4)}" y="{_n(self.y(v) + 3)}" '
                f'text-anchor="end" class="tick">{v:g}</text>'
            )
        step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 10**9) if self.turns / s <= 8)
        for turn in range(0, self.turns, step):
            self.add(
                f'<text x="{_n(self.x(turn))}" y="{_n(self.height - self.bottom + 12)}" '
                f'text-anchor="middle" class="tick">{turn + 1}</text>'
            )
        shown = phases or []
        for turn, phase in enumerate(shown):
            if turn and phase != shown[turn - 1]:
                x = _n(self.x(turn - 0.5))
                self.add(
                    f'<line x1="{x}" y1="{_n(self.top)}" x2="{x}" '
                    f'y2="{_n(self.y(0))}" stroke="{COLORS["axis"]}" '
                    'stroke-dasharray="2 3" stroke-width="0.6"/>'
                )
                self.add(
                    f'<text x="{_n(self.x(turn - 0.5) + 2)}" y="{_n(self.top + 8)}" '
                    f'class="phase">{escape(phase)}</text>'
                )

    def line(
        self, values: list[float | None], color: str, *, dash: str = "", width=1.5, label: str = ""
    ) -> None:
        """A polyline; a None breaks it (no value is drawn as no line, not as zero)."""
        runs: list[list[str]] = [[]]
        for turn, v in enumerate(values):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{_n(self.x(turn))},{_n(self.y(v))}")
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        for run in runs:
            if len(run) == 1:
                x, y = run[0].split(",")
                self.add(f'<circle cx="{x}" cy="{y}" r="1.5" fill="{color}"/>')
            elif run:
                self.add(
                    f'<polyline fill="none" stroke="{color}" stroke-width="{width}"'
                    f'{extra} points="{" ".join(run)}"><title>{escape(label)}</title>'
                    "</polyline>"
                )

    def hline(self, value: float, color: str, label: str) -> None:
        y = _n(self.y(value))
        self.add(
            f'<line x1="{_n(self.left)}" y1="{y}" x2="{_n(self.width - self.right)}" '
            f'y2="{y}" stroke="{color}" stroke-dasharray="5 3" stroke-width="1">'
            f"<title>{escape(label)}</title></line>"
        )

    def svg(self, label: str, cls: str) -> Markup:
        return Markup(
            f'<svg class="{cls}" role="img" aria-label="{escape(label)}" '
            f'viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}"><title>{escape(label)}</title>'
            + "".join(self.parts)
            + "</svg>"
        )


def _mean_per_turn(rows: list[list[float | None]]) -> list[float | None]:
    out: list[float | None] = []
    for k in range(max((len(r) for r in rows), default=0)):
        xs = [v for r in rows if k < len(r) for v in (r[k],) if v is not None]
        out.append(sum(xs) / len(xs) if xs else None)
    return out


def intensity_charts(data: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """(a) One chart per dimension: prescribed (line) and expressed (dots) for the first
    rollout with turns, and the expressed mean over rollouts (dashed) when there are several."""
    rollouts = [r for r in data["rollouts"] if r["turns"]]
    if not rollouts:
        return None, []
    first = next((r for r in rollouts if r["scored"]), rollouts[0])
    charts = []
    for dim in data["dimensions"]:
        prescribed = first["series"]["prescribed"].get(dim, [])
        expressed = first["series"]["expressed"].get(dim, [])
        plot = _Plot(340, 150, len(prescribed), (28, 10, 8, 18))
        plot.frame(first["series"]["phase"])
        plot.line(prescribed, COLORS["prescribed"], label=f"{dim}: prescribed")
        if len(rollouts) > 1:
            mean = _mean_per_turn([r["series"]["expressed"].get(dim, []) for r in rollouts])
            plot.line(
                mean,
                COLORS["mean"],
                dash="4 3",
                width=1.2,
                label=f"{dim}: expressed, mean over {len(rollouts)} rollouts",
            )
        for turn, (p, e) in enumerate(zip(prescribed, expressed, strict=False)):
            if e is not None:
                plot.add(
                    f'<circle cx="{_n(plot.x(turn))}" cy="{_n(plot.y(e))}" r="2.6" '
                    f'fill="{COLORS["expressed"]}"><title>turn {turn + 1}: expressed {fmt(e)}, '
                    f"prescribed {fmt(p)}</title></circle>"
                )
        scored = any(e is not None for e in expressed)
        charts.append(
            {
                "dimension": dim,
                "svg": plot.svg(f"{dim}: prescribed and expressed intensity by turn", "chart"),
                "expressed": scored,
            }
        )
    return first["rollout"], charts


def stagnation_chart(rollout: dict[str, Any]) -> Markup:
    """(c) Loop similarity and convergence by turn, their thresholds, the monitor's triggers
    (red: stagnation or convergence, grey ticks: repetition re-prompts), loop spans shaded red,
    turns before ``min_turn`` shaded grey: the monitor does not check there."""
    series, t = rollout["series"], rollout["stagnation"]["thresholds"]
    plot = _Plot(720, 190, len(series["turn"]), (28, 12, 10, 20))
    if t["min_turn"]:
        x1 = plot.x(min(t["min_turn"], plot.turns - 1) - 0.5)
        plot.add(
            f'<rect x="{_n(plot.left)}" y="{_n(plot.top)}" '
            f'width="{_n(max(0.0, x1 - plot.left))}" height="{_n(plot.y(0) - plot.top)}" '
            'fill="#f4f4f4"><title>before min_turn: the monitor does not check</title>'
            "</rect>"
        )
    for span in rollout["stagnation"]["loop_spans"]:
        if isinstance(span, list | tuple) and len(span) >= 2:
            x0, x1 = plot.x(span[0] - 0.5), plot.x(span[1] + 0.5)
            plot.add(
                f'<rect x="{_n(max(x0, plot.left))}" y="{_n(plot.top)}" '
                f'width="{_n(min(x1, plot.width - plot.right) - max(x0, plot.left))}" '
                f'height="{_n(plot.y(0) - plot.top)}" fill="#fbe3e1" class="loop-span">'
                f"<title>loop span: {escape(spans_text([span]))}</title></rect>"
            )
    plot.frame(series["phase"])
    plot.hline(t["loop"], COLORS["loop"], f"loop threshold {fmt(t['loop'])}")
    plot.hline(
        t["convergence"], COLORS["convergence"], f"convergence threshold {fmt(t['convergence'])}"
    )
    plot.line(series["loop_similarity"], COLORS["loop"], label="loop similarity")
    plot.line(series["convergence"], COLORS["convergence"], label="convergence")
    for event in rollout["monitor_events"]:
        x = _n(plot.x(event["turn"]))
        label = escape(event_text(event))
        if event["monitor"] == "repetition":
            plot.add(
                f'<line x1="{x}" y1="{_n(plot.y(0))}" x2="{x}" y2="{_n(plot.y(0) - 8)}" '
                f'stroke="{COLORS["repetition"]}" stroke-width="2" class="trigger-'
                f'repetition"><title>{label}</title></line>'
            )
        else:
            y = _n(plot.y(event["value"] if event["value"] is not None else 1.0))
            plot.add(
                f'<line x1="{x}" y1="{_n(plot.top)}" x2="{x}" y2="{_n(plot.y(0))}" '
                f'stroke="{COLORS["stagnation"]}" stroke-width="1"/>'
                f'<circle cx="{x}" cy="{y}" r="4" fill="{COLORS["stagnation"]}" '
                f'class="trigger"><title>{label}</title></circle>'
            )
    return plot.svg(f"{rollout['rollout']}: stagnation timeline", "chart timeline")


def spread_chart(values: list[float | None], mean: float | None) -> Markup:
    """(e) The rollout means of one scorer as dots on 0..1, their mean as a bar."""
    plot = _Plot(160, 22, 2, (6, 4, 6, 4))
    y = _n(plot.height / 2)
    plot.add(
        f'<line x1="{_n(plot.left)}" y1="{y}" x2="{_n(plot.width - plot.right)}" y2="{y}" '
        f'stroke="{COLORS["grid"]}" stroke-width="2"/>'
    )
    for v in values:
        if v is not None:
            plot.add(
                f'<circle cx="{_n(plot.x(v))}" cy="{y}" r="3" fill="{COLORS["mean"]}" '
                f'fill-opacity="0.6"><title>{fmt(v)}</title></circle>'
            )
    if mean is not None:
        x = _n(plot.x(mean))
        plot.add(f'<line x1="{x}" y1="2" x2="{x}" y2="20" stroke="#222" stroke-width="2"/>')
    return plot.svg("rollout means on 0..1", "spread")


def grade(value: float | None) -> str:
    """A CSS class by value (higher is better): the colour of a score cell."""
    if value is None:
        return "none"
    return "good" if value >= 0.7 else "mid" if value >= 0.4 else "bad"


def gapgrade(gap: float | None) -> str:
    """A CSS class by the size of a trajectory gap, whichever its sign."""
    if gap is None:
        return "none"
    return "bad" if abs(gap) >= 0.3 else "mid" if abs(gap) >= 0.15 else ""


@cache
def _environment() -> jinja2.Environment:
    return html_environment(
        "loom_sim.rollout.report",
        filters={
            "fmt": fmt,
            "signed": signed,
            "spread": spread,
            "value_range": value_range,
            "excerpt": excerpt,
            "grade": grade,
            "plural": plural,
            "gapgrade": gapgrade,
            "spans": spans_text,
            "event": event_text,
            "stop": rollout_line,
            "shown": shown,
        },
        keep_trailing_newline=True,
    )


def render_html(data: dict[str, Any]) -> str:
    first, charts = intensity_charts(data)
    spreads = {
        s: spread_chart(
            [(r["aggregates"].get(s) or {}).get("headline") for r in data["rollouts"]],
            data["aggregates"][s]["mean"],
        )
        for s in data["scorers"]
    }
    timelines = [(r, stagnation_chart(r)) for r in data["rollouts"] if r["turns"]]
    target = data.get("target")
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            data=data,
            first=first,
            charts=charts,
            spreads=spreads,
            timelines=timelines,
            colors=COLORS,
            target=target,
            target_note=section_note(target) if target else "",
            target_blocks=blocks(target) if target else [],
            target_charts=target_charts(target),
            faults=faults_html(data.get("faults")),
        )
    )
