"""Where the psychosis-bench-2.0 data the tests read lives.

``tests/data/psychosis-bench-2.0`` (in the repository, so a fresh clone runs these tests), else
``../shared/data/psychosis-bench-2.0`` beside the checkout; a test that needs it skips only when
neither exists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (
    ROOT / "tests" / "data" / "psychosis-bench-2.0",
    ROOT.parent / "shared" / "data" / "psychosis-bench-2.0",
)
BENCH: Path | None = next((path for path in CANDIDATES if path.is_dir()), None)
needs_bench = pytest.mark.skipif(
    BENCH is None, reason="no psychosis-bench-2.0 data in tests/data or ../shared/data"
)


def results_dir() -> Path:
    assert BENCH is not None
    return BENCH / "results"


def result_files() -> list[Path]:
    """Every psychosis-bench result file (not the run configs), in a stable order."""
    if BENCH is None:
        return []
    return sorted(p for p in results_dir().rglob("*.json") if p.name != "run_config.json")


def complete_files() -> list[Path]:
    """The result files that finished: they hold the source's ``summary_metrics``."""
    return [p for p in result_files() if json.loads(p.read_text()).get("summary_metrics")]


def result(name: str) -> Path:
    """One result file by name, wherever in ``results/`` it is."""
    return next(p for p in result_files() if p.name == name)
