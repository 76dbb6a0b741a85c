"""`loom-sim runs`: every run of a results folder, newest first, with its status, filterable;
one unreadable run is a line, not a failure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from workbench_runs import ROLLOUTS, TURNS, make_matrix, make_single

from loom_sim.cli import cli
from loom_sim.runs.catalog import find_runs


def _set(run: Path, created_at: str) -> None:
    path = run / "run.json"
    data = json.loads(path.read_text())
    data["created_at"] = created_at
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("work")
    root = tmp_path_factory.mktemp("results")
    matrix = make_matrix(work)
    shutil.copytree(matrix, root / "matrix")
    _set(root / "matrix", "2025-06-03T10:00:00+00:00")
    single = make_single(work, "scripted/varied", "single")
    shutil.copytree(single, root / "done")
    _set(root / "done", "2025-06-01T10:00:00+00:00")
    partial = root / "group" / "partial"  # a folder grouping runs, one level down
    shutil.copytree(single, partial)
    (partial / "rollout_001" / "transcript.json").unlink()
    _set(partial, "2025-06-02T10:00:00+00:00")
    failed = root / "failed"
    shutil.copytree(single, failed)
    path = failed / "rollout_000" / "transcript.json"
    transcript = json.loads(path.read_text())
    transcript.update(status="error", error="openai/x: 503 after 5 attempts")
    path.write_text(json.dumps(transcript))
    _set(failed, "2025-06-04T10:00:00+00:00")
    broken = root / "broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    (root / "notes").mkdir()  # not a run, not a group: ignored
    return root


def test_every_run_newest_first_with_its_status(results):
    runs = find_runs(results)
    assert [r.path for r in runs] == ["failed", "matrix", "group/partial", "done", "broken"]
    status = {r.path: r.status for r in runs}
    assert status == {
        "failed": "failed",
        "matrix": "complete",
        "group/partial": "partial",
        "done": "complete",
        "broken": "unreadable",
    }
    by = {r.path: r for r in runs}
    assert by["matrix"].kind == "matrix" and by["matrix"].cells == 2 * ROLLOUTS
    assert by["matrix"].targets == ["scripted/varied", "scripted/paraphrase"]
    assert by["group/partial"].resumable and by["failed"].resumable
    assert not by["done"].resumable
    assert by["done"].turns == by["done"].planned_turns == ROLLOUTS * TURNS
    assert by["done"].cost_usd == 0.0
    assert "not JSON" in (by["broken"].problem or "")


def test_filters(results):
    assert [r.path for r in find_runs(results, target="paraphrase")] == ["matrix"]
    assert [r.path for r in find_runs(results, status="partial")] == ["group/partial"]
    assert [r.path for r in find_runs(results, since="2025-06-03")] == ["failed", "matrix"]
    assert len(find_runs(results, config="MANIA")) == 4  # every readable run


def test_the_command_lists_and_filters(results):
    shown = CliRunner().invoke(cli, ["runs", str(results)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    order = [next(i for i, line in enumerate(lines) if f" {name} " in line) for name in
             ("failed", "matrix", "group/partial", "done")]  # fmt: skip
    assert order == sorted(order)
    assert "resumable" in shown.stdout and "unreadable" in shown.stdout
    as_json = CliRunner().invoke(cli, ["runs", str(results), "--json", "--status", "complete"])
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r["path"] for r in rows] == ["matrix", "done"]
    none = CliRunner().invoke(cli, ["runs", str(results), "--target", "nothing-like-it"])
    assert none.exit_code == 0 and "no runs" in none.stdout
    missing = CliRunner().invoke(cli, ["runs", str(results / "nowhere")])
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
