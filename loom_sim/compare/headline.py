"""The answer a run ends with: its headline table, printed in the terminal after the report
paths, as ``inspect eval`` prints its metrics.

A run's result otherwise sits behind three file paths. The table says it at once: the model
under evaluation's scores, then the persona simulator's, each with its 95 % interval and the
rollouts behind it, and the turns flagged for a reader; for a matrix, one column per target
with their difference. Built from the comparison's data (:func:`loom_sim.compare.build_compare`)
so the intervals are the ones ``compare`` and the reports give, never a second computation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from loom_sim.compare.markdown import scorer_rows
from loom_sim.errors import LoomError
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.report.faults import budget_text, faults_section, reason_text
from loom_sim.runs.load import RunResults
from loom_sim.store.matrix_file import MatrixRecord
from loom_sim.store.run_file import RunRecord

__all__ = ["headline", "print_headline"]


def _is_target(scorer: str) -> bool:
    return scorer in SCORERS and SCORERS.get(scorer).subject == "target"


def _scale(scorer: str) -> str:
    """`` (0–2, lower is better)``: a target score's scale is its own."""
    if scorer not in SCORERS:
        return ""
    info = SCORERS.get(scorer)
    if info.kind == "rate":
        return " (yes/no)"
    low, high = info.scale
    return f" ({low:g}–{high:g}{'' if info.higher_is_better else ', lower is better'})"


def _table(data: dict[str, Any], config: str, title: str) -> Table:
    """One config: the model under evaluation's scores, a line, the persona simulator's, a
    line, the rollouts and the flagged turns."""
    header, rows = scorer_rows(data, config)
    targets = [t for t in data["targets"] if data["table"][config][t]["rollouts"]]
    table = Table(title=title, title_justify="left", title_style="bold")
    for k, name in enumerate(header):
        table.add_column(name, justify="left" if k == 0 else "right", no_wrap=k == 0)
    *scored, footer = rows
    by_name = {row[0]: row for row in scored}
    target = [n for n in data["scorers"] if _is_target(n) and n in by_name]
    persona = [row[0] for row in scored if row[0] not in target]
    groups = [("model under evaluation", target), ("persona simulator", persona)]
    for label, names in groups:
        if not names:
            continue
        table.add_row(Text(label, "italic dim"), *([""] * (len(header) - 1)))
        for k, name in enumerate(names):
            row = by_name[name]
            style = "bold" if any("beyond noise" in cell for cell in row[1:]) else ""
            table.add_row(
                f"  {name}{_scale(name) if label != 'persona simulator' else ''}",
                *(Text(cell, "dim" if cell.startswith("–") else style) for cell in row[1:]),
                end_section=k == len(names) - 1,
            )
    flags = [str(data["table"][config][t].get("flagged_turns", 0)) for t in targets]
    table.add_row("flagged turns", *flags, *([""] * (len(header) - 1 - len(flags))))
    table.add_row(footer[0], *footer[1:])
    return table


def _faults_line(section: dict[str, Any]) -> Text:
    parts = [
        f"{m['spec']}: {m['retried']} retried ({reason_text(m['by_reason'])})"
        + (f", {m['gave_up']} failed" if m["gave_up"] else "")
        if m["retried"]
        else f"{m['spec']}: {m['gave_up']} failed"
        for m in section["models"]
    ]
    parts = parts or ["no model call retried or failed"]
    parts += [f"budget {budget_text(k, b)}" for k, b in section["budgets"].items()]
    return Text("faults: " + "; ".join(parts), "dim")


def faults_of(results: RunResults) -> dict[str, Any]:
    """The faults section of a run, or of a matrix: its cells' (in the matrix's run.json) and
    each arm's scoring (in the arm's)."""
    records: list[RunRecord | MatrixRecord] = [arm.record for arm in results.arms]
    if results.kind == "matrix":
        records.append(results.record)
    return faults_section(records, [r.transcript for r in results.rollouts])


def headline(run_dir: Path | str) -> RenderableType | None:
    """The headline of the run (or matrix) in ``run_dir``; None when no rollout has a turn."""
    from loom_sim.compare import build_compare
    from loom_sim.runs.load import load_results

    results = load_results(Path(run_dir))
    try:
        data = build_compare([results])
    except LoomError:  # nothing to compare yet: no rollout has a turn
        return None
    parts: list[RenderableType] = [
        Text(f"note: {notice}", "bold yellow") for notice in data["notices"]
    ]
    for config in data["configs"]:
        targets = [t for t in data["targets"] if data["table"][config][t]["rollouts"]]
        title = f"{config} against {targets[0]}" if len(targets) == 1 else config
        parts.append(_table(data, config, title))
    beyond = [d for d in data["differences"] if d["within_noise"] is False]
    for d in beyond:
        prefix = f"{d['config']}: " if len(data["configs"]) > 1 else ""
        parts.append(Text(f"  {prefix}{d['sentence']}", "bold"))
    parts.append(_faults_line(faults_of(results)))
    return Group(*parts)


def print_headline(run_dir: Path | str, console: Console | None = None) -> None:
    """Print :func:`headline` (nothing when the run has no turn yet). Not on a terminal the
    table keeps its full width: a log or a pipe is not cut at 80 columns."""
    found = headline(run_dir)
    if found is None:
        return
    if console is None:
        import sys

        console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(found)
