"""A worker node dies mid-run: three Ray nodes on this machine (``ray.cluster_utils.Cluster``),
``loom-sim run --executor ray --address`` against them, one worker node killed while its
rollouts are half done. The run completes, every turn is there once — the same turns the local
executor makes — and ``run.json`` counts the retries."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import contents, invoke
from ray.cluster_utils import Cluster
from workbench_runs import quick_config

from loom_sim.executors.fence import FENCE_FILE
from loom_sim.store.matrix_file import read_matrix
from loom_sim.testing.fake_server import FakeOpenAIServer

LOOM_SIM = Path(sys.executable).parent / "loom-sim"
TURNS = 8
STORE = 80 * 1024**2  # each node's object store: the runs pass small records only
# Notice a dead node in about a second and a half, not Ray's default half minute.
FAST_HEALTH_CHECKS = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}


@pytest.fixture
def cluster():
    """A head (no CPUs: it hosts the run's actors, never a rollout) and two worker nodes of
    one CPU each; shut down after, whatever happened."""
    nodes = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "object_store_memory": STORE,
            "include_dashboard": False,
            "_system_config": FAST_HEALTH_CHECKS,
        },
    )
    try:
        workers = [nodes.add_node(num_cpus=1, object_store_memory=STORE) for _ in range(2)]
        nodes.wait_for_nodes()
        yield nodes, workers
    finally:
        nodes.shutdown()


def run_args(config: Path, base_url: str, out: Path) -> list[str]:
    return [
        "run", str(config), "--target", "openai/a", "--target", "openai/b",
        "--rollouts", "2", "--turns", str(TURNS), "--seed", "8", "--no-score", "--no-cache",
        "--persona-model", "openai/persona", "--judge-model", "scripted/judge",
        "--base-url", base_url, "-j", "4", "-o", str(out),
    ]  # fmt: skip


def turns_done(cell_dir: Path) -> int:
    path = cell_dir / "turns.jsonl"
    return len(path.read_bytes().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_a_lost_node_loses_no_turn_and_repeats_none(cluster, tmp_path):
    nodes, workers = cluster
    config = quick_config(tmp_path)
    on_ray, local = tmp_path / "ray" / "run", tmp_path / "local" / "run"
    with FakeOpenAIServer(latency=0.15) as server:
        argv = [str(LOOM_SIM), *run_args(config, server.base_url, on_ray)]
        argv += ["--executor", "ray", "--address", nodes.address, "--cpus-per-cell", "0.5"]
        driver = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            victim = _kill_a_node_mid_rollout(nodes, workers, on_ray, driver)
            output, _ = driver.communicate(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        assert driver.returncode == 0, output.decode(errors="replace")[-3000:]
        made = invoke(*run_args(config, server.base_url, local))  # the reference
        assert made.exit_code == 0, made.output

    record = read_matrix(on_ray)
    cells = record.cells()
    ours, theirs = contents(on_ray), contents(local)
    for cell in cells:
        transcript = json.loads((on_ray / cell.id / "transcript.json").read_text())
        assert transcript["status"] == "done"
        assert [t["turn"] for t in transcript["turns"]] == list(range(TURNS))  # none lost, once
        for name in ("turns.jsonl", "transcript.json"):
            assert ours[f"{cell.id}/{name}"] == theirs[f"{cell.id}/{name}"], f"{cell.id}/{name}"
    assert not list(on_ray.rglob(FENCE_FILE))
    (execution,) = record.executions
    assert execution.executor == "ray" and execution.phase == "run" and execution.nodes == 3
    assert execution.lost == []
    assert victim in execution.retries and execution.retries[victim] >= 1
    assert set(execution.retries) <= {c.id for c in cells}
    text = output.decode(errors="replace")
    assert f"{victim}: retrying (attempt 2" in text  # shown in the live progress


def _kill_a_node_mid_rollout(nodes, workers, run_dir: Path, driver) -> str:
    """Wait for a cell with some turns done (but not all) on a worker node, kill that node
    without warning, and return the cell's id."""
    by_node = {w.node_id: w for w in workers}
    deadline = time.monotonic() + 240
    while True:
        assert driver.poll() is None, "the run ended before a node could be killed"
        assert time.monotonic() < deadline, "no cell got going on a worker node"
        for fence in run_dir.glob(f"*/rollout_*/{FENCE_FILE}"):
            try:
                claim = fence.read_text()
            except FileNotFoundError:
                continue  # that cell just finished
            node = claim.rsplit(" on ", 1)[-1]
            done = turns_done(fence.parent)
            if node in by_node and 2 <= done <= TURNS - 3:
                nodes.remove_node(by_node[node], allow_graceful=False)
                return f"{fence.parent.parent.name}/{fence.parent.name}"
        time.sleep(0.02)
