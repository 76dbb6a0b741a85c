"""Comparing runs: ``loom-sim compare RUN_DIR…`` and a matrix run's report.

The numbers are built once (:mod:`loom_sim.compare.data`) and rendered three times — the
terminal (rich), Markdown and HTML with per-turn curves — so they can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loom_sim.compare.data import RateSpec, build_compare, parse_rate

__all__ = ["RateSpec", "build_compare", "parse_rate", "write_compare", "write_matrix_report"]


def write_compare(data: dict, output: Path, title: str = "Comparison") -> list[Path]:
    """report.json, report.md and report.html of a comparison, into ``output``."""
    from loom_sim.compare.html import render_html
    from loom_sim.compare.markdown import render_markdown
    from loom_sim.rollout.report import report_json

    output.mkdir(parents=True, exist_ok=True)
    files = {
        "report.json": report_json(data),
        "report.md": render_markdown(data, title),
        "report.html": render_html(data, title),
    }
    paths = []
    for name, text in files.items():
        path = output / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8", newline="\n")
        tmp.replace(path)
        paths.append(path)
    return paths


def write_matrix_report(
    run_dir: Path, output: Path | None = None, rates: Sequence[RateSpec] = ()
) -> list[Path]:
    """A matrix run's report: every arm compared, one column per target."""
    data = build_compare([run_dir], rates)
    return write_compare(data, output or run_dir, f"Matrix run {run_dir.resolve().name}")
