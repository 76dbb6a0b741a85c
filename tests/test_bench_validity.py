"""benchmarks/bench_validity.py measures every detector a report rests on, on dev and on held-out
test items, and loom_sim/validity/measured.json holds exactly what it measures: the held-out
figures reports quote are re-measured here on every run. Each detector either reaches the bar
on held-out items or is called a weak signal, by how much, wherever it is quoted."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from loom_sim import validity

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import _validity  # noqa: E402

#: The detectors a report's verdicts rest on, each of which must have held-out figures.
HELD_OUT = (
    "failure_pattern",
    "continuation_prompt",
    "supported_met",
    "loop_after_redirect",
    "revelation",
    "capitulation",
    "gate",
    "citation_stance",
    "crux_type",
    "crux_type_reading",
)


PINNED = ["dev", "test", "test", "dev", "dev", "dev"]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_validity", ROOT / "benchmarks" / "bench_validity.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows():
    return _bench().rows()


def _key(row) -> tuple:
    return (row["system"], row["detector"], row["path"], row["split"])


def test_the_shipped_figures_are_the_ones_measured_now(rows):
    """Every deterministic row, dev and test, as measured now equals what reports read."""
    shipped = json.loads((ROOT / "loom_sim" / "validity" / "measured.json").read_text("utf-8"))
    kept = {_key(r): r for r in shipped["rows"] if r["path"] == "deterministic"}
    now = {_key(r): r for r in rows if r["path"] == "deterministic"}
    if not _validity.SHARED.is_dir():  # no copy of the transcripts: no real-transcript rows
        kept = {k: r for k, r in kept.items() if "[real transcripts]" not in k[1]}
    assert set(kept) == set(now), "run: .venv/bin/python benchmarks/bench_validity.py --write"
    for key, row in now.items():
        assert kept[key] == {k: v for k, v in row.items()}, (
            f"{key} re-measured as {row}: run benchmarks/bench_validity.py --write"
        )


@pytest.mark.parametrize("detector", HELD_OUT)
def test_each_detector_has_held_out_figures_and_reaches_the_bar_or_says_it_is_weak(rows, detector):
    [test] = [
        r
        for r in rows
        if (r["detector"], r["split"], r["path"]) == (detector, "test", "deterministic")
    ]
    assert test["n"] >= 30, test
    standing = validity.standing(detector)
    meets = test["precision"] >= 0.85 and test["recall"] >= 0.80
    said = standing.sentence()
    assert f"{test['n']} held-out cases" in said
    assert ("a weak signal" in said) is (not meets), said
    if not meets:  # and by how much
        for measure in ("precision", "recall"):
            if test[measure] < validity.BAR[measure]:
                gap = validity.BAR[measure] - test[measure]
                assert f"{measure} {gap:.2f} below" in said, said


def test_blind_items_split_by_their_content_half_and_half_with_no_text_on_both_sides():
    seen: Counter[str] = Counter()
    for path in sorted(_validity.BLIND.glob("*.jsonl")):
        items = _validity.read_jsonl(path)
        ids = [item["id"] for item in items]
        assert len(set(ids)) == len(ids), path.name
        seen.update(ids)
        splits = Counter(_validity.split_of(item) for item in items)
        assert 0.3 <= splits["test"] / len(items) <= 0.7, (path.name, splits)
        sides: dict[str, set[str]] = {}
        for item in items:  # the text alone, its label aside
            said = {k: v for k, v in item.items() if not isinstance(v, bool)}
            sides.setdefault(_validity.content_key(said), set()).add(_validity.split_of(item))
        both = [text for text, where in sides.items() if len(where) > 1]
        assert not both, (path.name, both[:2])
    assert all(n == 1 for n in seen.values()), "an id is used in two sets"
    # the rule is fixed (a hash of the content, not of the order of a file): a split never moves
    assert [_validity.split_of({"text": f"x-{i}", "label": True}) for i in range(6)] == PINNED


def test_the_benchmark_prints_dev_and_test_tables_with_intervals(rows, monkeypatch, capsys):
    """What ``bench_validity.py`` prints, from the rows measured above (not measured again)."""
    bench = _bench()
    monkeypatch.setattr(bench, "rows", lambda embedded=False: rows)
    monkeypatch.setattr(sys, "argv", ["bench_validity.py"])
    bench.main()
    out = capsys.readouterr().out
    assert "\nDEV\n" in out and "\nTEST\n" in out
    dev, test = out.split("\nTEST\n")
    assert "failure_pattern" in dev and "failure_pattern" in test
    weak = [line for line in test.splitlines() if line.endswith("weak")]
    assert any("citation_stance" in line for line in weak)  # a weak signal is marked
    assert all("[" in line for line in test.splitlines()[1:] if line.strip())  # intervals
