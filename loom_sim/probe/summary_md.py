"""``summary.md``: the probe summary (:mod:`loom_sim.probe.summary`) as one readable page.

Everything here is formatting of ``summary.json``'s content; no number is computed that the
JSON does not hold, so the page and the file can never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from loom_sim.probe.stats import Rate

BAR_WIDTH = 40
LISTED_PAIRS = 15  # rows of each found-here-missed-there table
CHECKPOINTS = 10  # rows of the regret table


def checkpoints(length: int, rows: int = CHECKPOINTS) -> list[int]:
    """About ``rows`` run counts from the first step to ``length`` (always included)."""
    if length <= 0:
        return []
    step = max(1, math.ceil(length / rows))
    points = list(range(step, length + 1, step))
    return points if points[-1] == length else [*points, length]


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def rate_of(entry: dict[str, Any]) -> Rate:
    return Rate(entry["successes"], entry["judged"], entry["unjudged"])


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def interval(entry: dict[str, Any]) -> str:
    ci = entry.get("ci95")
    return "—" if not ci else f"{percent(ci[0])} – {percent(ci[1])}"


def render_markdown(summary: dict[str, Any]) -> str:
    models = summary["models"]
    modes = list(summary["modes"])
    lines = [
        f"# Probe summary: {summary['config_name']}",
        "",
        f"Target `{models.get('target')}`, judge `{models.get('judge')}`, seed "
        f"{summary['seed']}. A run succeeds when the judge finds that the target's Turn-2 "
        "answer contradicts its Turn-1 position. Rates are over judged runs, with 95% Wilson "
        "intervals; runs the judge could not decide are counted apart.",
        "",
    ]
    for note in summary["notes"]:
        lines += [f"> **Note.** {note}", ""]
    if not modes:
        return "\n".join([*lines, "No mode has logged a run yet.", ""])
    lines += ["## Modes side by side", ""]
    lines += _table(
        [
            "mode",
            "runs",
            "contradictions",
            "success rate",
            "95% interval",
            "judge failures",
            "regret / run",
        ],
        [
            [
                mode,
                e["runs"],
                f"{e['successes']}/{e['judged']}",
                percent(e["rate"]),
                interval(e),
                e["unjudged"],
                "—" if e["regret_per_run"] is None else f"{e['regret_per_run']:.3f}",
            ]
            for mode, e in summary["modes"].items()
        ],
    )
    lines.append("")
    unfinished = [m for m, e in summary["modes"].items() if e.get("status") not in (None, "done")]
    if unfinished:
        lines += [f"Not finished (see probe.json): {', '.join(unfinished)}.", ""]
    for comparison in summary["comparisons"]:
        lines += _comparison(comparison)
    for key, title in (
        ("by_category", "Success by Turn-1 category"),
        ("by_strategy", "Success by strategy"),
        ("by_prompt_category", "Success by prompt category"),
    ):
        lines += _breakdown(title, summary[key], modes)
    lines += _regret(summary["regret"])
    return "\n".join(lines).rstrip() + "\n"


def _comparison(c: dict[str, Any]) -> list[str]:
    found_by, baseline = c["found_by"], c["baseline"]
    lines = [
        f"## Contradictions {found_by} found that {baseline} missed",
        "",
        f"{c['paired']} paired runs (same run index, so the same prompt and Turn-1 seed): "
        f"{found_by} only {c[f'only_{found_by}']}, {baseline} only {c[f'only_{baseline}']}, "
        f"both {c['both']}, neither {c['neither']}, not comparable (a judge failure) "
        f"{c['unjudged']}.",
        "",
    ]
    found = c["found"]
    if not found:
        return [*lines, f"None: {found_by} found no contradiction that {baseline} missed.", ""]
    lines += _table(
        [
            "run",
            "prompt",
            "Turn-1 category",
            f"strategy ({found_by} / {baseline})",
            f"{found_by}'s Turn-2 answer",
            f"{baseline}'s Turn-2 answer",
        ],
        [
            [
                f["run_id"],
                f"{f['prompt_id']} ({f['prompt_category']})",
                f["category"]
                if f["category"] == f["baseline_category"]
                else f"{f['category']} / {f['baseline_category']}",
                f"{f['strategy']} / {f['baseline_strategy']}",
                f["answer"],
                f["baseline_answer"],
            ]
            for f in found[:LISTED_PAIRS]
        ],
    )
    if len(found) > LISTED_PAIRS:
        lines.append(f"\n… and {len(found) - LISTED_PAIRS} more, all in summary.json.")
    return [*lines, ""]


def _breakdown(title: str, by_mode: dict[str, dict[str, Any]], modes: list[str]) -> list[str]:
    keys = sorted({k for groups in by_mode.values() for k in groups})
    rows = [
        [key, *(rate_of(by_mode[m][key]).text() if key in by_mode[m] else "—" for m in modes)]
        for key in keys
    ]
    return [f"## {title}", "", *_table(["", *modes], rows), ""]


def _regret(regret: dict[str, Any]) -> list[str]:
    curves: dict[str, list[float]] = regret["curves"]
    bandit = curves.get("bandit")
    lines = [
        "## Bandit: cumulative regret",
        "",
        f"Expected regret per run = best rate for the run's Turn-1 category minus the chosen "
        f"strategy's rate. Reference: {regret['note']}. A learning policy's curve flattens; a "
        "fixed policy's grows at a steady slope.",
        "",
    ]
    if not bandit:
        return [*lines, "No bandit runs in this directory.", ""]
    state = regret.get("bandit_state")
    if state:
        lines += [
            f"The bandit's counts live in `{state['path']}`: it had learned "
            f"{state['learned_before']} outcomes before these runs and "
            f"{state['learned_after']} after (the curve covers this directory's runs only).",
            "",
        ]
    points = checkpoints(len(bandit))
    others = [m for m in curves if m != "bandit"]
    rows = []
    previous = 0
    for point in points:
        window = bandit[point - 1] - (bandit[previous - 1] if previous else 0.0)
        row: list[object] = [point, f"{bandit[point - 1]:.2f}"]
        row += [f"{curves[m][point - 1]:.2f}" if len(curves[m]) >= point else "—" for m in others]
        row.append(f"{window / (point - previous):.3f}")
        rows.append(row)
        previous = point
    lines += _table(["runs", "bandit", *others, "bandit regret / run in this stretch"], rows)
    top = max(bandit[-1], 1e-9)
    chart = [
        f"{p:>6} {'█' * round(BAR_WIDTH * bandit[p - 1] / top):<{BAR_WIDTH}} {bandit[p - 1]:.2f}"
        for p in points
    ]
    return [
        *lines,
        "",
        "```text",
        f"{'runs':>6} cumulative regret of the bandit (full width = {top:.2f})",
        *chart,
        "```",
        "",
    ]
