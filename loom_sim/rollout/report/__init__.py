"""Reports on a run: report.json (every number), report.md (a one-minute read), report.html
(self-contained, with inline SVG charts).

The data is built once (:mod:`loom_sim.rollout.report.data`) and rendered twice, so the Markdown and
the HTML can never disagree about a number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loom_sim.rollout.report.data import build_report
from loom_sim.rollout.report.record import ReportRecord, read_report, report_record

__all__ = [
    "ReportRecord",
    "build_report",
    "read_report",
    "report_json",
    "report_record",
    "write_report",
]


def report_json(data: dict[str, Any]) -> str:
    """Sorted keys, two-space indent: the same run gives the same bytes."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_report(run_dir: Path | str, output: Path | str | None = None) -> list[Path]:
    """Write report.json, report.md and report.html into ``output`` (default: the run dir)."""
    from loom_sim.rollout.report.html import render_html
    from loom_sim.rollout.report.markdown import render_markdown

    run_dir = Path(run_dir)
    out = Path(output) if output is not None else run_dir
    data = build_report(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "report.json": report_json(report_record(data).data()),  # written through its type
        "report.md": render_markdown(data),
        "report.html": render_html(data),
    }
    paths = []
    for name, text in files.items():
        path = out / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8", newline="\n")
        tmp.replace(path)
        paths.append(path)
    return paths
