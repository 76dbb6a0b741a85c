"""``loom-sim harness report RUN_DIR``: scenarios across repeats, in a table and a page.

Per scenario: sessions, passes, the pass rate with its Wilson interval, pass^k for every k up
to the repeats (:mod:`loom_sim.rates`), the mean of each scorecard component, how sessions
stopped. Per session: its score, gate, and a chart of the user's confidence and the goal
progress, turn by turn. Written as ``report.json``, ``report.md`` and ``report.html`` (one
self-contained page: inline SVG, no scripts, nothing fetched).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

from loom_sim.errors import LoomError
from loom_sim.harness.packs import COMPONENTS
from loom_sim.harness.plan import HARNESS_FILE, HARNESS_FORMAT
from loom_sim.harness.records import SCORECARD_FILE, SESSION_FILE, SUMMARY_FILE
from loom_sim.harness.session_file import given, read_session
from loom_sim.rates import pass_hat_k, wilson


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collect(run_dir: Path) -> dict[str, Any]:
    """Every session's summary, scorecard and status, grouped by scenario."""
    if not (run_dir / HARNESS_FILE).is_file():
        raise LoomError(f"{run_dir} is not a harness run (no readable {HARNESS_FILE})")
    plan = HARNESS_FORMAT.read(run_dir / HARNESS_FILE)
    sessions: list[dict[str, Any]] = []
    for entry in plan.sessions:
        folder = run_dir / entry.name
        summary = _load(folder / SUMMARY_FILE)
        started = read_session(folder / SESSION_FILE)
        sessions.append(
            {
                "name": entry.name,
                "scenario": entry.scenario,
                "repeat": entry.repeat,
                "status": started.status if started is not None else "not started",
                "error": given(started.error) if started is not None else None,
                "summary": summary,
                "scorecard": _load(folder / SCORECARD_FILE),
            }
        )
    scenarios: dict[str, list[dict[str, Any]]] = {}
    for session in sessions:
        scenarios.setdefault(session["scenario"], []).append(session)
    return {
        "pack": plan.pack_name,
        "seed": plan.seed,
        "models": plan.models,
        "target": plan.target,
        "scenarios": [aggregate(sid, group) for sid, group in scenarios.items()],
        "sessions": sessions,
    }


def aggregate(scenario: str, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    done = [s["summary"] for s in sessions if s["summary"] is not None]
    n, passes = len(done), sum(1 for s in done if s["passed"])
    interval = wilson(passes, n)
    mean = lambda values: round(sum(values) / len(values), 4) if values else None  # noqa: E731
    return {
        "scenario": scenario,
        "sessions": len(sessions),
        "scored": n,
        "passed": passes,
        "pass_rate": round(passes / n, 4) if n else None,
        "wilson95": [round(interval[0], 4), round(interval[1], 4)] if interval else None,
        "pass_hat_k": {str(k): round(pass_hat_k(passes, n, k) or 0.0, 4) for k in range(1, n + 1)},
        "score": mean([s["score"] for s in done]),
        "components": {c: mean([s["components"][c] for s in done]) for c in COMPONENTS},
        "turns": mean([s["turns"] for s in done]),
        "stop_reasons": dict(Counter(s["stop_reason"] or s["status"] for s in done)),
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def scenario_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The per-scenario table: its header and rows, as text cells."""
    header = [
        "scenario",
        "sessions",
        "passed",
        "pass rate (95% CI)",
        "pass^k",
        "score",
        *COMPONENTS,
        "stopped",
    ]
    rows = []
    for row in data["scenarios"]:
        ci = row["wilson95"]
        rate = _pct(row["pass_rate"]) + (f" ({_pct(ci[0])}–{_pct(ci[1])})" if ci else "")
        hats = ", ".join(f"^{k} {_num(v)}" for k, v in row["pass_hat_k"].items()) or "–"
        stops = ", ".join(f"{k} ×{v}" for k, v in row["stop_reasons"].items())
        rows.append(
            [
                row["scenario"],
                str(row["sessions"]),
                str(row["passed"]),
                rate,
                hats,
                _num(row["score"]),
                *(_num(row["components"][c]) for c in COMPONENTS),
                stops,
            ]
        )
    return header, rows


def run_line(data: dict[str, Any]) -> str:
    models = ", ".join(f"{role} {spec}" for role, spec in data["models"].items())
    target = f"; target {data['target']}" if data["target"] else ""
    return f"Seed {data['seed']}; models: {models}{target}"


def detector_line(data: dict[str, Any]) -> str:
    """The measured figures of the detectors behind the verdicts shown (failed actions, met
    criteria, reflections saying little), as the scorecards state them."""
    shown: dict[str, str] = {}
    for s in data["sessions"]:
        for name, d in ((s["scorecard"] or {}).get("detectors") or {}).items():
            if "precision" in d:
                figures = f"P {d['precision']:.2f} R {d['recall']:.2f} (n={d['n']})"
            else:
                figures = d.get("note", "")
            shown.setdefault(name, f"{name} {figures}")
    if not shown:
        return ""
    return (
        "Detectors behind these verdicts, precision and recall measured on labelled sets: "
        + "; ".join(shown.values())
    )


def markdown(data: dict[str, Any]) -> str:
    header, rows = scenario_table(data)
    lines = [f"# Harness report: {data['pack']}", "", run_line(data), ""]
    if detectors := detector_line(data):
        lines += [detectors, ""]
    lines += ["| " + " | ".join(header) + " |", "| --- " * len(header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", "| session | status | stop | turns | score | passed |", "| --- " * 6 + "|"]
    for s in data["sessions"]:
        summary = s["summary"] or {}
        lines.append(
            f"| {s['name']} | {s['status']} | {summary.get('stop_reason') or s['error'] or '–'} | "
            f"{summary.get('turns', '–')} | {_num(summary.get('score'))} | "
            f"{'yes' if summary.get('passed') else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def chart(confidence: list[float], progress: list[float]) -> str:
    """Confidence (blue) and goal progress (orange), turn by turn, as inline SVG."""
    width, height, pad = 360, 140, 28
    turns = max(len(confidence), len(progress), 1)
    x = lambda i: pad + (width - 2 * pad) * (i / max(turns - 1, 1))  # noqa: E731
    y = lambda v: height - pad - (height - 2 * pad) * v  # noqa: E731
    parts = [f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img">']
    inner_w, inner_h = width - 2 * pad, height - 2 * pad
    frame = f'x="{pad}" y="{pad}" width="{inner_w}" height="{inner_h}"'
    parts.append(f'<rect {frame} fill="none" stroke="#ccc"/>')
    for value in (0.0, 0.5, 1.0):
        parts.append(f'<text x="4" y="{y(value) + 4:.1f}" font-size="10">{value:g}</text>')
    for series, colour, name in (
        (confidence, "#1f77b4", "confidence"),
        (progress, "#ff7f0e", "goal progress"),
    ):
        if series:
            points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(series))
            line = f'points="{points}" fill="none" stroke="{colour}" stroke-width="2"'
            parts.append(f"<polyline {line}><title>{name}</title></polyline>")
            parts += [
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{colour}"/>'
                for i, v in enumerate(series)
            ]
    parts.append(f'<text x="{pad}" y="{height - 6}" font-size="10">turn 0</text>')
    parts.append(
        f'<text x="{width - pad - 40}" y="{height - 6}" font-size="10">turn {turns - 1}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def page(data: dict[str, Any]) -> str:
    e = html.escape
    header, table = scenario_table(data)
    rows = []
    for s in data["sessions"]:
        summary = s["summary"] or {}
        card = s["scorecard"] or {}
        gate = ", ".join(
            f"{k}: {'✓' if v['passed'] else '✗'}" for k, v in card.get("gate", {}).items()
        )
        components = "".join(
            f"<tr><td>{e(c)}</td><td>{_num(v.get('value'))}</td><td>{v.get('weight', '')}</td></tr>"
            for c, v in card.get("components", {}).items()
        )
        plot = chart(
            summary.get("confidence_by_turn", []), summary.get("goal_progress_by_turn", [])
        )
        rows.append(
            f"<section><h3>{e(s['name'])}</h3><p>{e(s['status'])}, "
            f"{e(str(summary.get('stop_reason') or s['error'] or ''))}; "
            f"{summary.get('turns', 0)} turns; score {_num(summary.get('score'))}; "
            f"{'passed' if summary.get('passed') else 'not passed'} ({e(gate)})</p>"
            f"<div class=row>{plot}"
            f"<table><tr><th>component</th><th>value</th><th>weight</th></tr>{components}</table></div>"
            "<p class=legend><span style='color:#1f77b4'>■</span> confidence "
            "<span style='color:#ff7f0e'>■</span> goal progress</p></section>"
        )
    head = "<tr>" + "".join(f"<th>{e(c)}</th>" for c in header) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in table)
    style = (
        "body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 6px}"
        ".row{display:flex;gap:2em;align-items:flex-start}.legend{font-size:12px}"
    )
    return (
        f"<!doctype html><meta charset=utf-8><title>Harness report: {e(data['pack'])}</title>"
        f"<style>{style}</style><h1>Harness report: {e(data['pack'])}</h1>"
        f"<p>{e(run_line(data))}</p><p>{e(detector_line(data))}</p>"
        f"<table>{head}{body}</table><h2>Sessions</h2>{''.join(rows)}"
    )


def write_report(run_dir: Path) -> list[Path]:
    data = collect(run_dir)
    out = {
        "report.json": json.dumps(data, indent=2, ensure_ascii=False) + "\n",
        "report.md": markdown(data),
        "report.html": page(data),
    }
    paths = []
    for name, text in out.items():
        (run_dir / name).write_text(text, encoding="utf-8")
        paths.append(run_dir / name)
    return paths
