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
    from loom_sim.rollout.report.faults import faults_html, faults_markdown

    output.mkdir(parents=True, exist_ok=True)
    markdown, html = render_markdown(data, title), render_html(data, title)
    if data.get("faults"):  # a matrix's: the model calls its cells and scoring took
        markdown = markdown.rstrip("\n") + "\n\n" + "\n".join(faults_markdown(data["faults"]))
        html = html.replace("</body>", f"{faults_html(data['faults'])}\n</body>", 1)
    files = {
        "report.json": report_json(data),
        "report.md": markdown.rstrip("\n") + "\n",
        "report.html": html,
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
    from loom_sim.compare.headline import faults_of
    from loom_sim.runs.load import load_results

    results = load_results(Path(run_dir))
    data = build_compare([results], rates)
    data["faults"] = faults_of(results)
    return write_compare(data, output or run_dir, f"Matrix run {run_dir.resolve().name}")
