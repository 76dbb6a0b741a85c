"""``run --shard k/N`` and ``loom-sim merge``: the shards of a run, joined, are the run one
process makes — cell for cell, score for score, report for report (timestamps aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from distributed import MANIA, MATRIX, MODELS, assert_same_run, contents, invoke

from loom_sim.errors import LoomError
from loom_sim.store.distribution import Shard, parse_shard
from loom_sim.store.matrix_file import read_matrix
from loom_sim.store.run_file import read_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The same matrix run whole, and as shards 1/3, 2/3, 3/3 merged (both scored and
    reported), in folders of the same name so that the reports name the same run."""
    base = tmp_path_factory.mktemp("shards")
    whole = base / "whole" / "run"
    made = invoke("run", *MATRIX, "--seed", "5", "-o", str(whole))
    assert made.exit_code == 0, made.output
    shards = []
    for k in (1, 2, 3):
        out = base / f"shard{k}"
        made = invoke("run", *MATRIX, "--seed", "5", "--shard", f"{k}/3", "-o", str(out))
        assert made.exit_code == 0, made.output
        assert "holds shard" in made.stderr and not (out / "report.md").exists()
        shards.append(out)
    merged = base / "merged" / "run"
    joined = invoke("merge", *map(str, shards), "-o", str(merged))
    assert joined.exit_code == 0, joined.output
    assert "merged 3 of 3 shards: 8 cells" in joined.output
    return {"whole": whole, "merged": merged, **{f"shard{k}": s for k, s in enumerate(shards, 1)}}


def test_shards_merged_equal_the_unsharded_run(runs):
    assert_same_run(runs["merged"], runs["whole"])
    record = read_matrix(runs["merged"])
    assert record.shard is None and "--shard" not in record.argv


def test_each_shard_ran_its_own_cells_round_robin(runs):
    cells = read_matrix(runs["whole"]).cells()
    ran = {}
    for k in (1, 2, 3):
        shard_dir = runs[f"shard{k}"]
        assert read_matrix(shard_dir).shard == Shard(k, 3)
        for cell in cells:
            if (shard_dir / cell.id / "transcript.json").is_file():
                assert cell.id not in ran, f"{cell.id} ran twice"
                ran[cell.id] = k
    assert ran == {c.id: c.position % 3 + 1 for c in cells}  # every cell, once
    assert sorted(ran.values()) == [1, 1, 1, 2, 2, 2, 3, 3]  # balanced
    # The arms' run.json are the unsharded run's: the shard is the matrix's record alone.
    for arm in read_matrix(runs["shard2"]).arms:
        assert read_run(runs["shard2"] / arm.key).shard is None


def test_a_partial_merge_resumes_into_the_whole_run(runs, tmp_path):
    """A shard that never ran: the merged run is partial, and --resume makes its cells."""
    partial = tmp_path / "partial" / "run"
    joined = invoke("merge", str(runs["shard1"]), str(runs["shard3"]), "-o", str(partial))
    assert joined.exit_code == 0, joined.output
    assert "shards 2/3 were not given" in joined.stderr
    assert f"loom-sim run --resume {partial}" in joined.stderr
    resumed = invoke("run", "--resume", str(partial))
    assert resumed.exit_code == 0, resumed.output
    assert_same_run(partial, runs["whole"])


def test_a_single_run_shards_by_rollout(tmp_path):
    common = [str(MANIA), "--target", "scripted/varied", *MODELS, "--turns", "2"]
    common += ["--rollouts", "3", "--seed", "2", "--no-score"]
    whole = tmp_path / "whole" / "run"
    assert invoke("run", *common, "-o", str(whole)).exit_code == 0
    parts = []
    for k in (1, 2):
        out = tmp_path / f"part{k}"
        assert invoke("run", *common, "--shard", f"{k}/2", "-o", str(out)).exit_code == 0
        parts.append(out)
    assert sorted(p.name for p in parts[0].glob("rollout_*")) == ["rollout_000", "rollout_002"]
    assert read_run(parts[1]).shard == Shard(2, 2)
    merged = tmp_path / "merged" / "run"
    assert invoke("merge", *map(str, parts), "-o", str(merged), "--no-report").exit_code == 0
    assert_same_run(merged, whole)


def test_resuming_a_shard_runs_only_its_cells(runs, tmp_path):
    cut = tmp_path / "shard2"
    shutil.copytree(runs["shard2"], cut)
    record = read_matrix(cut)
    mine = [c for c in record.cells() if record.shard.owns(c.position)]
    shutil.rmtree(cut / mine[0].id)
    resumed = invoke("run", "--resume", str(cut), "--no-score")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.count(": done,") == len(mine)  # its own cells, no one else's
    again = contents(cut)[f"{mine[0].id}/turns.jsonl"]
    assert again == contents(runs["shard2"])[f"{mine[0].id}/turns.jsonl"]


def test_merge_refuses_what_is_not_one_run(runs, tmp_path):
    other = tmp_path / "other"
    made = invoke("run", *MATRIX, "--seed", "6", "--shard", "2/3", "--no-score", "-o", str(other))
    assert made.exit_code == 0, made.output
    refused = invoke("merge", str(runs["shard1"]), str(other), "-o", str(tmp_path / "m1"))
    assert refused.exit_code == 1
    assert "is not a shard of the same run" in refused.stderr and "seed" in refused.stderr
    twice = invoke("merge", str(runs["shard1"]), str(runs["shard1"]), "-o", str(tmp_path / "m2"))
    assert twice.exit_code == 1 and "are both shard 1/3" in twice.stderr
    whole = invoke("merge", str(runs["whole"]), "-o", str(tmp_path / "m3"))
    assert whole.exit_code == 1 and "is not a shard" in whole.stderr
    taken = invoke("merge", str(runs["shard1"]), "-o", str(runs["merged"]))
    assert taken.exit_code == 1 and "already holds a run" in taken.stderr
    assert not (tmp_path / "m1" / "run.json").exists()


def test_shard_needs_a_seed_and_a_proper_k_of_n(tmp_path):
    unseeded = invoke("run", *MATRIX, "--shard", "1/2", "-o", str(tmp_path / "a"))
    assert unseeded.exit_code == 1 and "--shard needs --seed" in unseeded.stderr
    for bad in ("0/2", "3/2", "two", "1/0"):
        result = invoke("run", *MATRIX, "--seed", "1", "--shard", bad, "-o", str(tmp_path / "b"))
        assert result.exit_code == 1 and "--shard" in result.stderr, bad
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    with pytest.raises(LoomError, match="k must be between 1 and N"):
        parse_shard("4/3")
    assert parse_shard(" 2 / 3 ") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"


def test_resume_takes_the_shard_from_run_json(runs):
    result = invoke("run", "--resume", str(runs["shard1"]), "--shard", "2/3")
    assert result.exit_code == 1 and "leave out --shard" in result.stderr


def test_the_shard_record_is_in_run_json(runs):
    data = json.loads((runs["shard3"] / "run.json").read_text())
    assert data["shard"] == {"index": 3, "count": 3}
