"""The debate's deterministic detectors, measured on their labelled sets (the authors' and the
blind ones, tests/data/validity/[blind/]debate_*.jsonl) by benchmarks/validity_debate.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from validity_debate import measure

REACHED = ("gate", "disagreement", "citation_stance", "crux_type", "crux_type_reading")
#: Measured with the words alone and TF-IDF too: what runs where MiniLM cannot load
FALLBACKS = ("gate", "disagreement", "citation_stance")


@pytest.fixture(scope="module")
def rows():
    return [r for r in measure() if r["path"] == "deterministic"]


def test_the_benchmark_reports_every_detector_on_dev_with_its_intervals(rows):
    dev = {r["detector"]: r for r in rows if r["split"] == "dev"}
    assert set(dev) == {*REACHED, *(f"{name}[fallback]" for name in FALLBACKS)}
    for row in dev.values():
        assert 0.0 <= row["precision"] <= 1.0 and 0.0 <= row["recall"] <= 1.0
        assert row["n"] >= 18
        low, high = row["recall_ci"]
        assert low <= row["recall"] <= high


def test_the_report_quotes_each_detector_by_its_standing():
    from loom_sim.debate.validity import LABELS, measured
    from loom_sim.validity import standing

    shipped = measured()
    assert shipped.date
    for detector in REACHED:
        figure = shipped.get(detector)
        assert figure is not None, detector
        assert str(figure) == f"{LABELS[detector]}: {standing(detector).sentence()}"


def test_the_learned_checks_find_more_than_the_words_alone_on_held_out_items(rows):
    """The gate and the citation check with MiniLM and their learned checks beside the words
    find more of the held-out disagreements and supporting citations than the words alone,
    and the fallbacks are quoted as such."""
    from loom_sim.debate.validity import measured

    test = {r["detector"]: r for r in rows if r["split"] == "test"}
    for name in ("gate", "citation_stance"):
        assert test[name]["recall"] > test[f"{name}[fallback]"]["recall"], name
        fallback = measured().get(f"{name}[fallback]")
        assert fallback is not None and "(its fallback)" in str(fallback)
