"""Runs as flat rows: one per turn and one per rollout, for pandas, R or a spreadsheet.

The columns are documented in ``docs/workbench.md`` (:data:`TURN_COLUMNS`,
:data:`ROLLOUT_COLUMNS`, and the per-scorer and per-dimension families); a test checks that
every column written is documented. Every row of a file has the same columns, in the same
order: the union of the scorers (registry order) and dimensions of every run exported. A
value that does not exist is empty in CSV and ``null`` in JSONL, never 0.

A CSV file is opened in spreadsheets, which run a cell beginning with ``=``, ``+``, ``-`` or
``@`` (or a tab or carriage return before one) as a formula; messages are model output, so a
persona's ``=HYPERLINK(...)`` would be a live link. In CSV such a text cell is written with a
single quote in front, as spreadsheet users expect; numbers are written as they are, and
JSONL, read by programs, keeps every text exactly.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from loom_sim.models.base import Usage
from loom_sim.runs.load import RolloutResult, RunResults
from loom_sim.runs.scores import (
    NOT_APPLICABLE,
    SCORED,
    rollout_value,
    scorer_names,
    state,
)
from loom_sim.store.records import TurnRecord

__all__ = [
    "FORMATS",
    "ROLLOUT_COLUMNS",
    "TURN_COLUMNS",
    "columns_markdown",
    "rollout_rows",
    "turn_rows",
    "write_rows",
]

FORMATS = ("csv", "jsonl")

#: The fixed columns of a turn row, with what each holds (docs/workbench.md shows this table).
TURN_COLUMNS: dict[str, str] = {
    "run": "the run directory's name",
    "cell": "the cell's id: `rollout_000`, or `<arm>/rollout_000` in a matrix run",
    "config": "the persona config's file name",
    "target": "the model under evaluation (provider/name)",
    "rollout": "the rollout's index within its run or arm (0-based)",
    "seed": "the run's seed (rollouts with the same config, seed and index are paired)",
    "turn": "the turn's number (0-based, as in turns.jsonl)",
    "phase": "the trajectory phase of the turn",
    "injection": "scaffolding sent this turn: full, reminder or none",
    "input_tokens": "tokens read by every model call of the turn",
    "output_tokens": "tokens written by every model call of the turn",
    "cost_usd": "the turn's cost in USD (empty when a price is unknown)",
    "persona_message": "what the persona said",
    "target_message": "what the model under evaluation (or an adversary) answered",
}
#: Families of turn columns, one per dimension or scorer.
TURN_FAMILIES: dict[str, str] = {
    "intensity_<dimension>": "the intensity the trajectory prescribed for the turn (0..1)",
    "score_<scorer>": "the scorer's value for the turn (empty unless scored)",
    "score_<scorer>_state": "scored, failed, not_applicable or absent",
    "score_<scorer>_error": "why a failed score has no value",
}
ROLLOUT_COLUMNS: dict[str, str] = {
    "run": TURN_COLUMNS["run"],
    "cell": TURN_COLUMNS["cell"],
    "config": TURN_COLUMNS["config"],
    "target": TURN_COLUMNS["target"],
    "rollout": TURN_COLUMNS["rollout"],
    "seed": TURN_COLUMNS["seed"],
    "status": "done, error, incomplete (running or interrupted) or pending (not started)",
    "stop_reason": "why the rollout stopped (max_turns, cost_budget...)",
    "turns": "turns completed",
    "input_tokens": "tokens read by every model call of the rollout",
    "output_tokens": "tokens written by every model call of the rollout",
    "cost_usd": "the rollout's cost in USD (empty when a price is unknown)",
    "duration_s": "wall time of the rollout in seconds",
    "judge": "the judge model that scored it (empty when not scored)",
}
ROLLOUT_FAMILIES: dict[str, str] = {
    "score_<scorer>": "the scorer's headline over the rollout's turns (its registered "
    "aggregation, the mean unless it says otherwise)",
    "score_<scorer>_n": "turns with a value",
    "score_<scorer>_failed": "turns the scorer could not score",
    "score_<scorer>_not_applicable": "turns the scorer does not apply to",
}


def _usage(usage: Iterable[Usage]) -> tuple[int, int, float | None]:
    total = Usage(0, 0, 0.0)
    for part in usage:
        total = total + part
    cost = None if total.cost_usd is None else round(total.cost_usd, 8)
    return total.input_tokens, total.output_tokens, cost


def _dimensions(results: list[RunResults]) -> list[str]:
    found: dict[str, None] = {}
    for run in results:
        for rollout in run.rollouts:
            for record in rollout.transcript.turns:
                found.update(dict.fromkeys(record.intensities))
    return list(found)


def _scorers(results: list[RunResults]) -> list[str]:
    return scorer_names(r.transcript for run in results for r in run.rollouts)


def _identity(rollout: RolloutResult) -> dict[str, Any]:
    return {
        "run": rollout.run,
        "cell": rollout.cell.id,
        "config": rollout.config,
        "target": rollout.target,
        "rollout": rollout.cell.rollout,
        "seed": rollout.arm.record.seed,
    }


def turn_rows(results: list[RunResults]) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The columns, and one row per completed turn of every rollout, in run and cell order."""
    dims, scorers = _dimensions(results), _scorers(results)
    head = list(TURN_COLUMNS)[: list(TURN_COLUMNS).index("injection") + 1]
    columns = [*head, *(f"intensity_{d}" for d in dims)]
    for name in scorers:
        columns += [f"score_{name}", f"score_{name}_state", f"score_{name}_error"]
    columns += [c for c in TURN_COLUMNS if c not in head]

    def rows() -> Iterator[dict[str, Any]]:
        for run in results:
            for rollout in run.rollouts:
                base = _identity(rollout)
                for record in rollout.transcript.turns:
                    yield _turn_row(base, record, dims, scorers)

    return columns, rows()


def _turn_row(
    base: dict[str, Any], record: TurnRecord, dims: list[str], scorers: list[str]
) -> dict[str, Any]:
    row = dict(base, turn=record.turn, phase=record.phase, injection=record.injection)
    for dim in dims:
        row[f"intensity_{dim}"] = record.intensities.get(dim)
    for name in scorers:
        score = record.scores.get(name)
        found = state(score)
        row[f"score_{name}"] = score.value if found == SCORED and score else None
        row[f"score_{name}_state"] = found
        row[f"score_{name}_error"] = score.error if score is not None else None
    row["input_tokens"], row["output_tokens"], row["cost_usd"] = _usage(record.usage.values())
    row["persona_message"] = record.persona
    row["target_message"] = record.interlocutor
    return row


def rollout_rows(results: list[RunResults]) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The columns, and one row per rollout (cell) of every run, pending ones included."""
    scorers = _scorers(results)
    columns = list(ROLLOUT_COLUMNS)
    for name in scorers:
        columns += [
            f"score_{name}",
            f"score_{name}_n",
            f"score_{name}_failed",
            f"score_{name}_not_applicable",
        ]

    def rows() -> Iterator[dict[str, Any]]:
        for run in results:
            for rollout in run.every_cell():  # pending cells made one at a time, as written
                t = rollout.transcript
                usage = (
                    _usage(t.usage.values())
                    if t.usage
                    else _usage(u for r in t.turns for u in r.usage.values())
                )
                row = dict(
                    _identity(rollout),
                    status=t.status,
                    stop_reason=t.stop_reason,
                    turns=len(t.turns),
                    input_tokens=usage[0],
                    output_tokens=usage[1],
                    cost_usd=t.cost_usd if t.usage else usage[2],
                    duration_s=round(t.duration_s, 3),
                    judge=t.scores.judge if t.scores is not None else None,
                )
                for name in scorers:
                    states = [state(r.scores.get(name)) for r in t.turns if name in r.scores]
                    row[f"score_{name}"] = rollout_value(t, name)
                    row[f"score_{name}_n"] = states.count(SCORED)
                    row[f"score_{name}_failed"] = states.count("failed")
                    row[f"score_{name}_not_applicable"] = states.count(NOT_APPLICABLE)
                yield row

    return columns, rows()


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a text starting like a formula gets a leading
    single quote; anything else (numbers included) is left as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def write_rows(
    columns: list[str], rows: Iterable[dict[str, Any]], path: Path | None, fmt: str
) -> int:
    """Write the rows as CSV or JSONL to ``path`` (atomically: a reader never sees half a
    file), or to stdout when ``path`` is None; the number of rows written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    buffer = io.StringIO(newline="")
    count = 0
    if fmt == "csv":
        # CRLF, as RFC 4180 and spreadsheets have it: the csv module quotes a cell holding any
        # character of the line terminator, so a lone CR inside a message stays in its cell.
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\r\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {k: "" if row.get(k) is None else spreadsheet_safe(row.get(k)) for k in columns}
            )
            count += 1
    else:
        for row in rows:
            buffer.write(json.dumps({k: row.get(k) for k in columns}, ensure_ascii=False) + "\n")
            count += 1
    text = buffer.getvalue()
    if path is None:
        sys.stdout.write(text)
    else:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8", newline="")
        tmp.replace(path)
    return count


def columns_markdown() -> str:
    """The documented columns, as docs/workbench.md shows them (scripts/gen-docs)."""
    lines = ["One row per turn (`turns.csv` / `turns.jsonl`):", ""]
    lines += ["| column | what it holds |", "| --- | --- |"]
    head = list(TURN_COLUMNS)[: list(TURN_COLUMNS).index("injection") + 1]
    for name in head:
        lines.append(f"| `{name}` | {TURN_COLUMNS[name]} |")
    for name, what in TURN_FAMILIES.items():
        lines.append(f"| `{name}` | {what} |")
    for name in TURN_COLUMNS:
        if name not in head:
            lines.append(f"| `{name}` | {TURN_COLUMNS[name]} |")
    lines += ["", "One row per rollout (`rollouts.csv` / `rollouts.jsonl`):", ""]
    lines += ["| column | what it holds |", "| --- | --- |"]
    for name, what in ROLLOUT_COLUMNS.items():
        lines.append(f"| `{name}` | {what} |")
    for name, what in ROLLOUT_FAMILIES.items():
        lines.append(f"| `{name}` | {what} |")
    return "\n".join(lines)
