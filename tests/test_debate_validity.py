"""The debate's deterministic detectors, measured on their labelled sets
(tests/data/validity/debate_*.jsonl) by benchmarks/validity_debate.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from validity_debate import measure

REACHED = ("gate", "disagreement", "citation_stance", "crux_type")


@pytest.fixture(scope="module")
def rows():
    return {r["detector"]: r for r in measure() if r["path"] == "deterministic"}


@pytest.mark.parametrize("detector", REACHED)
def test_each_deterministic_detector_reaches_090_precision_and_recall(rows, detector):
    row = rows[detector]
    assert row["n"] >= 30
    assert row["precision"] >= 0.90 and row["recall"] >= 0.90, row


def test_the_benchmark_reports_every_detector_with_its_figures(rows):
    assert set(rows) == {"gate", "disagreement", "citation_stance", "crux_type"}
    for row in rows.values():
        assert 0.0 <= row["precision"] <= 1.0 and 0.0 <= row["recall"] <= 1.0


def test_the_figures_the_report_quotes_are_the_ones_measured(rows):
    """loom_sim/debate/validity.json (written by the benchmark's --write) is what reports read;
    a change to a detector or its labelled set that moves a figure must rewrite it."""
    from loom_sim.debate.validity import measured

    shipped = measured()
    assert shipped.date
    for detector, row in rows.items():
        figure = shipped.get(detector, "deterministic")
        assert figure is not None, detector
        assert (figure.n, figure.precision, figure.recall) == (
            row["n"],
            row["precision"],
            row["recall"],
        ), "run: .venv/bin/python benchmarks/validity_debate.py --embedded --write"
