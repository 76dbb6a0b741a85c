"""``--executor ray`` on a Ray started in this process (2 CPUs, a small object store): the same
runs as the local executor, byte for byte; provider limits and budgets held across workers;
a missing Ray is one sentence. The multi-node fault test is in test_ray_faults.py."""

from __future__ import annotations

import json
import logging
import shutil
import sys
import time
from pathlib import Path

import pytest
import ray
import trio
import yaml
from distributed import MATRIX, assert_same_run, contents, invoke
from workbench_runs import quick_config

from loom_sim.executors.coordinator import Coordinator
from loom_sim.executors.fence import FENCE_FILE
from loom_sim.executors.limiter import ClusterLimiter, ProviderLimits
from loom_sim.store.matrix_file import read_matrix
from loom_sim.testing.fake_server import FakeOpenAIServer


@pytest.fixture(scope="module")
def local_ray():
    """One Ray for the module, capped (2 CPUs, an 80 MB object store) and shut down after."""
    ray.init(
        num_cpus=2,
        object_store_memory=80 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow  # Ray's start-up and workers take seconds
def test_a_matrix_on_ray_equals_the_local_run(local_ray, tmp_path):
    """The done-when line: scripted models, 8 cells, run and scored as Ray tasks; every
    transcript, score, trace and report equals the local executor's (timestamps aside)."""
    local, on_ray = tmp_path / "local" / "run", tmp_path / "ray" / "run"
    made = invoke("run", *MATRIX, "--seed", "5", "-o", str(local))
    assert made.exit_code == 0, made.output
    made = invoke("run", *MATRIX, "--seed", "5", "-o", str(on_ray), "--executor", "ray")
    assert made.exit_code == 0, made.output
    assert_same_run(on_ray, local)
    assert not list(on_ray.rglob(FENCE_FILE))  # an attempt's claim goes with it
    executions = read_matrix(on_ray).executions
    assert [(e.executor, e.phase, e.cells) for e in executions] == [
        ("ray", "run", 8),
        ("ray", "score", 8),
    ]
    assert all(e.retries == {} and e.lost == [] and e.nodes == 1 for e in executions)
    assert read_matrix(local).executions == []  # the local executor records nothing new


@pytest.mark.slow  # Ray's start-up and workers take seconds
def test_ray_resumes_what_another_executor_left(local_ray, tmp_path):
    """A run cut as a kill leaves it (a torn turn, a cell never started), resumed on Ray:
    every unit reopens its files and continues, as --resume does locally."""
    whole = tmp_path / "whole" / "run"
    made = invoke("run", *MATRIX, "--seed", "3", "--no-score", "-o", str(whole))
    assert made.exit_code == 0, made.output
    cut = tmp_path / "cut" / "run"
    shutil.copytree(whole, cut)
    torn = cut / "depressed_patient--scripted-paraphrase" / "rollout_001"
    (torn / "transcript.json").unlink()
    lines = (torn / "turns.jsonl").read_bytes().splitlines(keepends=True)
    (torn / "turns.jsonl").write_bytes(lines[0] + lines[1][:40])
    shutil.rmtree(cut / "mania_patient--scripted-varied" / "rollout_001")
    resumed = invoke("run", "--resume", str(cut), "--no-score", "--executor", "ray")
    assert resumed.exit_code == 0, resumed.output
    ours, theirs = contents(cut), contents(whole)
    for name in theirs:
        if name.endswith(("turns.jsonl", "transcript.json")):
            assert ours[name] == theirs[name], name


def limited_config(folder: Path, limit: int) -> Path:
    path = quick_config(folder)
    data = yaml.safe_load(path.read_text())
    data.setdefault("models", {})["provider_concurrency"] = {"openai": limit}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.slow  # Ray's start-up and workers take seconds
def test_a_providers_limit_holds_across_workers(local_ray, tmp_path):
    """Four cells at once on four workers, an OpenAI-compatible server, a limit of 2 calls
    in flight: the server never sees more than 2 — the limit is the cluster's, not each
    worker's (which would let 4 through)."""
    config = limited_config(tmp_path, 2)
    with FakeOpenAIServer(latency=0.25) as server:
        made = invoke(
            "run", str(config), "--target", "openai/a", "--target", "openai/b",
            "--rollouts", "2", "--turns", "4", "--seed", "4", "--no-score", "--no-cache",
            "--persona-model", "openai/persona", "--judge-model", "scripted/judge",
            "--base-url", server.base_url, "-j", "4", "--executor", "ray",
            "--cpus-per-cell", "0.5", "-o", str(tmp_path / "run"),
        )  # fmt: skip
        stats = server.stats()
    assert made.exit_code == 0, made.output
    assert stats["by_route"]["/v1/chat/completions"] == 4 * 4 * 2  # every turn: two calls
    assert stats["peak_in_flight"] == 2


@pytest.mark.slow  # Ray's start-up and workers take seconds
def test_the_limits_actor_grants_in_order_and_takes_back_a_lost_holders_slots(local_ray):
    """ProviderLimits through ClusterLimiter, as a worker uses them: six trio tasks, limit 2;
    a holder that is dropped (its worker lost) gives its slot to the next in line, and its
    requests that arrive later are refused."""
    limits = ray.remote(ProviderLimits).options(num_cpus=0, max_concurrency=100).remote()
    ray.get(limits.reset.remote({"openai": 2}))
    held, most = [0], [0]

    async def main() -> None:
        limiter = ClusterLimiter(limits, "openai", "pass:cell#1")

        async def call() -> None:
            async with limiter:
                held[0] += 1
                most[0] = max(most[0], held[0])
                await trio.sleep(0.05)
                held[0] -= 1

        async with trio.open_nursery() as nursery:
            for _ in range(6):
                nursery.start_soon(call)

    trio.run(main)
    assert most[0] == 2
    deadline = time.monotonic() + 10  # releases are sent without waiting for an answer
    while ray.get(limits.stats.remote())["used"] != {"openai": 0}:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    # A lost holder: its slot is taken back when its cell's next attempt drops it.
    assert ray.get(limits.acquire.remote("openai", "pass:lost#1", "l1"))
    assert ray.get(limits.acquire.remote("openai", "pass:lost#1", "l2"))
    waiting = limits.acquire.remote("openai", "pass:other#1", "o1")
    assert ray.wait([waiting], timeout=0.3)[0] == []  # full: it waits
    ray.get(limits.drop.remote("pass:lost#1"))
    assert ray.get(waiting) is True
    assert ray.get(limits.acquire.remote("openai", "pass:lost#1", "l3")) is False
    ray.kill(limits)


def test_the_coordinator_counts_a_retried_cells_money_once():
    coordinator = Coordinator()
    assert coordinator.attempt_started("c", "node-a") == (1, 0.0)
    coordinator.charge("c", 1, 2.0)
    coordinator.charge("d", 0, 5.0)  # not an attempt it knows: not counted
    attempt, spent = coordinator.attempt_started("c", "node-b")  # the retry re-charges turns
    assert (attempt, spent) == (2, 0.0)
    assert coordinator.charge("c", 1, 1.0) == 0.0  # the lost attempt's late charge
    assert coordinator.charge("c", 2, 3.0) == 3.0
    assert coordinator.drain() == [("retried", "c", 2, "node-b")] and coordinator.drain() == []
    assert coordinator.attempts() == {"c": 2}


@pytest.mark.slow  # Ray's start-up and workers take seconds
def test_one_budget_holds_across_workers(local_ray, tmp_path):
    """test_matrix's shared budget with each cell a Ray task: a first turn costs c, the
    budget is 1.5 c, one cell at a time. The coordinator carries the spending from worker to
    worker, so the run stops where the local executor's does: the first cell crosses the
    budget after its second turn, every later one makes the one turn a rollout always makes."""
    price = "100000/100000"  # USD per million tokens
    config = str(quick_config(tmp_path))
    common = [
        "--seed", "1", "--persona-model", "openai/persona", "--judge-model", "scripted/judge",
        "--price", f"openai/a={price}", "--price", f"openai/b={price}",
        "--price", f"openai/persona={price}", "--no-score", "--no-cache",
    ]  # fmt: skip
    with FakeOpenAIServer() as server:
        first = tmp_path / "first"
        made = invoke(
            "run", config, "--target", "openai/a", "--turns", "1", "-o", str(first),
            "--base-url", server.base_url, *common,
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        turn = json.loads((first / "rollout_000" / "turns.jsonl").read_text())
        cost = sum(u["cost_usd"] for u in turn["usage"].values())
        out = tmp_path / "m"
        made = invoke(
            "run", config, "--target", "openai/a", "--target", "openai/b",
            "--rollouts", "2", "--turns", "4", "--max-cost", str(1.5 * cost),
            "--concurrency", "1", "-o", str(out), "--base-url", server.base_url,
            "--executor", "ray", *common,
        )  # fmt: skip
    assert made.exit_code == 0, made.output
    transcripts = [
        json.loads((out / cell.id / "transcript.json").read_text())
        for cell in read_matrix(out).cells()
    ]
    assert {t["stop_reason"] for t in transcripts} == {"cost_budget"}
    assert [len(t["turns"]) for t in transcripts] == [2, 1, 1, 1]


def test_without_ray_the_executor_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    result = invoke("run", *MATRIX, "--seed", "1", "-o", str(tmp_path / "m"), "--executor", "ray")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "--executor ray needs Ray, which is not installed: pip install 'loom-sim[ray]'"
    )
    assert not (tmp_path / "m").exists()  # refused before anything was planned
    local = invoke("run", *MATRIX, "--seed", "1", "--no-score", "-o", str(tmp_path / "l"))
    assert local.exit_code == 0, local.output  # everything else works without it
    flag = invoke("score", str(tmp_path / "l"), "--address", "ray://x:1")
    assert flag.exit_code == 1 and "--address is for a cluster: add --executor ray" in flag.stderr
