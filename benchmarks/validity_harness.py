"""How often the harness's detectors are right, on labelled sets written for the purpose.

    .venv/bin/python benchmarks/validity_harness.py

Four detectors decide what a harness scorecard counts, and each is measured here on its own set
of positives and near-misses (``tests/data/validity/harness_*.jsonl``):

* **failure_pattern** — the default ``failure_pattern`` (:mod:`loom_sim.plugins.outcomes`):
  does a reply report an error? Real error lines of sqlite3, bc, Python, node, psql, mysql,
  shells… against rows, counts and chat replies that mention errors without being one.
* **continuation_prompt** — the default ``continuation_prompt``
  (:mod:`loom_sim.harness.targets.continuation`): is the line the program waits on a continuation
  prompt? Real ones against main prompts and lines of output.
* **supported_met** — :func:`loom_sim.judging.support.support`: does an evaluator's evidence
  quote the transcript or name an event or file the session has? Real quotes and names against
  templates, fabricated quotes, restated criteria and events that are not there.
* **reflection_quality** — :func:`loom_sim.harness.reflection_check.low`: does a reflection say
  too little (empty, filler, field names, one sentence in every field, a repeat)?

Positive is the class the detector flags (an error, a continuation prompt, supported evidence,
a hollow reflection). All four read text exactly — an error line, a prompt, a quote — so they
have only a deterministic path; ``measure(embedded=True)`` returns the same rows.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from loom_sim.harness.messages import Reflection  # noqa: E402
from loom_sim.harness.reflection_check import low  # noqa: E402
from loom_sim.harness.targets.continuation import continuation_for  # noqa: E402
from loom_sim.judging.support import support  # noqa: E402
from loom_sim.plugins.outcomes import error_line  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _validity import authors, blind, counts, rows_by_split, short  # noqa: E402


def _reflection(fields: dict[str, Any]) -> Reflection:
    return Reflection(
        0,
        {},
        [],
        fields["what_worked"],
        fields["what_failed"],
        fields["open_questions"],
        fields["next_hypothesis"],
        0.5,
    )


def _failure(item: dict[str, Any]) -> bool:
    return error_line(item["text"]) is not None


def _continuation(item: dict[str, Any]) -> bool:
    """The default as the terminal adapter applies it: with the program's own prompt."""
    program = item["program"].split()[0]  # "python (indented)" is python
    return bool(re.search(continuation_for(program), item["line"]))


def _supported(item: dict[str, Any]) -> bool:
    found = support(item["evidence"], item["transcript"], item["events"], item["files"])
    return found is not None


def _hollow(item: dict[str, Any]) -> bool:
    previous = _reflection(item["previous"]) if item["previous"] else None
    return low(_reflection(item["reflection"]), item["action"], item["signals"], previous)


#: detector -> (its labelled set, the label's key, the detector's verdict on one item)
DETECTORS: dict[str, tuple[str, str, Callable[[dict[str, Any]], bool]]] = {
    "failure_pattern": ("failure_pattern", "failed", _failure),
    "continuation_prompt": ("continuation", "continuation", _continuation),
    "supported_met": ("supported_met", "supported", _supported),
    "reflection_quality": ("reflection_quality", "low", _hollow),
}


def score(verdicts: list[tuple[bool, bool]]) -> tuple[float, float]:
    """(precision, recall) of (predicted, labelled) pairs; 1.0 where nothing was predicted or
    nothing was there to find."""
    tp, fp, fn, _ = counts(verdicts)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return round(precision, 4), round(recall, 4)


def items(name: str) -> list[dict[str, Any]]:
    """Detector ``name``'s labelled items, each with its split: the authors' set (dev) and the
    blind set (half dev, half test)."""
    data = DETECTORS[name][0]
    return [*authors(f"harness_{data}"), *blind(f"harness_{data}")]


def misses(name: str, split: str | None = None) -> list[dict[str, Any]]:
    """The items ``name`` gets wrong (in ``split``, or all), for a reader checking figures."""
    _, key, verdict = DETECTORS[name]
    return [
        item
        for item in items(name)
        if verdict(item) != item[key] and split in (None, item["split"])
    ]


def measure(embedded: bool = False) -> list[dict[str, Any]]:
    """One row per detector and split: detector, path, split, n, precision and recall with
    intervals. The harness's detectors read exact text and have no embedded path, so
    ``embedded`` adds no rows."""
    rows = []
    for name, (_, key, verdict) in DETECTORS.items():
        rows += rows_by_split(
            name,
            "deterministic",
            items(name),
            lambda item, key=key, verdict=verdict: [(verdict(item), bool(item[key]))],
        )
    return rows


def main() -> None:
    rows = measure(embedded="--embedded" in sys.argv)
    print(
        f"{'detector':<22} {'split':<5} {'n':>4} {'precision [95% CI]':>18} {'recall [95% CI]':>18}"
    )
    for row in rows:
        print(f"{row['detector']:<22} {row['split']:<5} {row['n']:>4} {short(row)}")
    for name in DETECTORS:
        for item in misses(name, "dev"):
            shown = {k: v for k, v in item.items() if k in ("text", "line", "evidence", "program")}
            print(f"  {name} gets wrong (dev): {json.dumps(shown, ensure_ascii=False)[:150]}")


if __name__ == "__main__":
    main()
