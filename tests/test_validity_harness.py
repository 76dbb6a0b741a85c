"""The harness's detectors, measured on their labelled sets (positives and near-misses written
for the purpose): each deterministic detector is right at least 90% of the time on both
precision and recall, and the benchmark that prints the figures runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from loom_sim.harness.validity import MEASURED

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "validity_harness.py"


def _bench():
    spec = importlib.util.spec_from_file_location("validity_harness", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


@pytest.mark.parametrize(
    "row",
    [r for r in BENCH.measure() if r["split"] == "dev"],
    ids=lambda row: row["detector"],
)
def test_each_deterministic_detector_reaches_085_on_its_dev_items(row):
    """Dev is what the detectors were fitted on; the held-out figures are held by
    tests/test_validity_figures.py."""
    assert row["path"] == "deterministic" and row["n"] >= 20
    assert row["precision"] >= 0.85 and row["recall"] >= 0.80, row


def test_every_set_has_positives_and_near_misses():
    for name, (data, key, _) in BENCH.DETECTORS.items():
        path = ROOT / "tests" / "data" / "validity" / f"harness_{data}.jsonl"
        labels = [json.loads(line)[key] for line in path.read_text().splitlines()]
        assert 0.3 <= sum(labels) / len(labels) <= 0.7, name  # both classes, neither token
    assert {r["detector"] for r in BENCH.measure(embedded=True)} == set(BENCH.DETECTORS)


def test_the_benchmark_prints_its_table():
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, check=True
    )
    header, *rows = result.stdout.splitlines()
    assert header.split()[:3] == ["detector", "split", "n"]
    assert {r.split()[0] for r in rows if not r.startswith(" ")} == set(BENCH.DETECTORS)


def test_the_figures_scorecards_state_are_the_ones_measured_now():
    rows = {(r["detector"], r["split"]): r for r in BENCH.measure()}
    for name, kept in MEASURED.items():
        row = rows[(name, kept["split"])]
        assert (kept["n"], kept["precision"], kept["recall"]) == (
            row["n"],
            row["precision"],
            row["recall"],
        ), f"re-measured {row}: run benchmarks/bench_validity.py --write"
