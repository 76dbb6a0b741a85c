"""What a run's numbers cost to get: model calls retried (by reason) and given up, replies asked
again, and the budgets with the rollouts they stopped.

``run.json`` keeps the faults of every session; a reader of the report should not have to open
it to learn that a result took 300 retries against a rate limit, or that half the rollouts
were cut short by the cost budget. Built once here and rendered by the Markdown and HTML
reports and the viewer's run page, so the three agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from loom_sim.store.matrix_file import MatrixRecord
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import RunRecord

__all__ = ["BUDGET_STOPS", "faults_html", "faults_markdown", "faults_section"]

#: Stop reasons that a budget caused.
BUDGET_STOPS = {"cost_budget": "max_cost_usd", "runtime_budget": "max_runtime_s"}


def faults_section(
    records: Iterable[RunRecord | MatrixRecord], transcripts: Sequence[Transcript]
) -> dict[str, Any]:
    """The faults of ``records`` (a run's; a matrix's and its arms') summed by model spec,
    the replies asked again in ``transcripts``, and the budgets with what they stopped."""
    by_spec: dict[str, dict[str, Any]] = {}
    budgets: dict[str, float] = {}
    for record in records:
        for spec, fault in record.faults.items():
            entry = by_spec.setdefault(spec, {"retried": {}, "gave_up": 0})
            for reason, n in fault.retried.items():
                entry["retried"][reason] = entry["retried"].get(reason, 0) + n
            entry["gave_up"] += fault.gave_up
        for name in ("max_cost_usd", "max_runtime_s"):
            value = getattr(record.budgets, name)
            if value is not None:
                budgets[name] = value
    models = [
        {
            "spec": spec,
            "retried": sum(entry["retried"].values()),
            "by_reason": dict(sorted(entry["retried"].items())),
            "gave_up": entry["gave_up"],
        }
        for spec, entry in sorted(by_spec.items())
    ]
    stopped: dict[str, int] = {}
    for t in transcripts:
        if t.stop_reason in BUDGET_STOPS:
            stopped[t.stop_reason] = stopped.get(t.stop_reason, 0) + 1
    return {
        "models": models,
        "retried": sum(m["retried"] for m in models),
        "gave_up": sum(m["gave_up"] for m in models),
        "asked_again": sum(r.failed_attempts for t in transcripts for r in t.turns),
        "budgets": {
            name: {"limit": limit, "stopped": stopped.get(stop, 0)}
            for stop, name in BUDGET_STOPS.items()
            if (limit := budgets.get(name)) is not None
        },
        "errors": sum(1 for t in transcripts if t.status == "error"),
    }


def reason_text(by_reason: Mapping[str, int]) -> str:
    """``HTTP 429 ×9, timeout ×3``."""
    return ", ".join(f"{reason} ×{n}" for reason, n in by_reason.items())


def budget_text(name: str, budget: Mapping[str, Any]) -> str:
    limit = budget["limit"]
    said = f"cost ${limit:g}" if name == "max_cost_usd" else f"runtime {limit:g} s"
    n = budget["stopped"]
    return f"{said}: stopped {n} rollout{'s' * (n != 1)}"


def faults_markdown(section: Mapping[str, Any] | None) -> list[str]:
    """The report.md section: one line when nothing went wrong, else a table by model."""
    if not section:
        return []
    lines = ["## Model calls: faults, retries and budgets", ""]
    if not section["models"] and not section["asked_again"]:
        lines.append("No model call was retried or failed.")
    if section["models"]:
        lines += ["| model | retried | by reason | failed after every retry |", "|---|---|---|---|"]
        for m in section["models"]:
            lines.append(
                f"| {m['spec']} | {m['retried']} | {reason_text(m['by_reason']) or '–'} "
                f"| {m['gave_up']} |"
            )
        lines.append("")
        lines.append(
            f"{section['retried']} attempt{'s' * (section['retried'] != 1)} retried, "
            f"{section['gave_up']} call{'s' * (section['gave_up'] != 1)} failed after every retry."
        )
    if section["asked_again"]:
        n = section["asked_again"]
        lines.append(f"{n} unusable repl{'ies' if n != 1 else 'y'} asked again.")
    for name, budget in section["budgets"].items():
        lines.append(f"Budget {budget_text(name, budget)}.")
    return [*lines, ""]


def faults_html(section: Mapping[str, Any] | None, heading: str = "h2") -> Markup:
    """The same section as HTML (report.html and the viewer's run page), escaped here."""
    if not section:
        return Markup("")
    parts = [f"<{heading}>Model calls: faults, retries and budgets</{heading}>"]
    if not section["models"] and not section["asked_again"]:
        parts.append('<p class="faults none">No model call was retried or failed.</p>')
    if section["models"]:
        rows = "".join(
            f"<tr><td>{escape(m['spec'])}</td><td>{m['retried']}</td>"
            f'<td class="text">{escape(reason_text(m["by_reason"]) or "–")}</td>'
            f"<td>{m['gave_up']}</td></tr>"
            for m in section["models"]
        )
        parts.append(
            '<table class="faults"><tr><th>model</th><th>retried</th><th>by reason</th>'
            f"<th>failed after every retry</th></tr>{rows}</table>"
        )
    notes = []
    if section["asked_again"]:
        n = section["asked_again"]
        notes.append(f"{n} unusable repl{'ies' if n != 1 else 'y'} asked again.")
    notes += [f"Budget {budget_text(k, b)}." for k, b in section["budgets"].items()]
    parts += [f'<p class="meta">{escape(note)}</p>' for note in notes]
    return Markup("\n".join(parts))
