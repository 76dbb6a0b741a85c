"""Precision and recall of every detector whose verdict a score or a report rests on.

    .venv/bin/python benchmarks/bench_validity.py              # deterministic paths
    .venv/bin/python benchmarks/bench_validity.py --embedded   # and the embedded model's

Each system measures its own detectors on labelled sets written for the purpose (positives and
near-misses, ``tests/data/validity/<system>_*.jsonl``) in ``benchmarks/validity_<system>.py``,
whose ``measure(embedded)`` returns one row per detector and path; this script runs every one
it finds and prints one table. A detector's figures are what its reports state.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def measures() -> dict[str, Any]:
    """Every ``validity_<system>.py`` beside this script, by system, as a loaded module."""
    found = {}
    for path in sorted(HERE.glob("validity_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found[path.stem.removeprefix("validity_")] = module
    return found


def rows(embedded: bool = False) -> list[dict[str, Any]]:
    out = []
    for system, module in measures().items():
        for row in module.measure(embedded=embedded):
            out.append({"system": system, **row})
    return out


def main() -> None:
    table = rows(embedded="--embedded" in sys.argv)
    print(f"{'system':<9} {'detector':<44} {'path':<14} {'n':>4} {'precision':>10} {'recall':>7}")
    for row in table:
        print(
            f"{row['system']:<9} {row['detector']:<44} {row['path']:<14} {row['n']:>4} "
            f"{row['precision']:>10.2f} {row['recall']:>7.2f}"
        )


if __name__ == "__main__":
    main()
