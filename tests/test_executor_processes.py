"""``--workers N``: a run's cells over worker processes on this machine.

The runs use scripted models (and, where a test must catch a run mid-way, an OpenAI-compatible
server whose replies wait at a gate), so two runs with the same seed make the same turns.
What may differ between two runs of the same plan is left out of the comparisons (tests/
distributed.py's VOLATILE: times, the command line, the executions record, the concurrency),
and the header's copy of the command line (``--workers 2`` is in one and not the other).
A rollout stopped mid-turn and resumed keeps in its ``trace.jsonl`` the messages of the turn
that was in flight (the trace records what was said); so after a stop only the records of
turns and transcripts are compared, as the interrupt tests do.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import signal
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from loom_sim.cli import cli
from loom_sim.errors import LoomError
from loom_sim.executors import EXECUTORS, ExecutorSettings, open_executor
from loom_sim.executors.processes import ProcessesExecutor, share
from loom_sim.executors.worker_count import IN_PROCESS_WORKER_BYTES, by_memory
from loom_sim.models.base import ModelResponse, Usage
from loom_sim.models.cache import ResponseCache
from loom_sim.testing.fake_server import FakeOpenAIServer
from tests.distributed import MATRIX, contents, invoke
from tests.gated_server import GatedServer
from tests.terminal import LOOM_SIM, Terminal
from tests.workbench_runs import extra_scorers, quick_config

SCRIPTED = ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
SCRIPTED += ["--judge-model", "scripted/judge"]


def comparable(run_dir: Path) -> dict:
    found = contents(run_dir)
    for name, data in found.items():
        if name.endswith("run.json") and isinstance(data, dict) and data.get("header"):
            data["header"].pop("command", None)
    return found


def records(run_dir: Path) -> dict:
    """Every rollout's turn records and transcript, what a stopped and resumed run must have
    exactly as an uninterrupted one."""
    return {
        name: data
        for name, data in comparable(run_dir).items()
        if name.endswith(("turns.jsonl", "transcript.json"))
    }


def executions(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "run.json").read_text()).get("executions", [])


# ─── the same files ─────────────────────────────────────────────────────────


@pytest.mark.slow  # two runs, one of them starting two worker processes
def test_a_two_worker_run_writes_the_files_a_one_worker_run_writes(tmp_path):
    """Scored and reported: every rollout's turns, transcript, trace, scores and the report
    are the same whether one process ran the four rollouts or two workers ran two each."""
    one, two = tmp_path / "one" / "run", tmp_path / "two" / "run"  # the report names its folder
    args = ["run", "mania_patient", "--turns", "3", "--rollouts", "4", *SCRIPTED, "--seed", "5"]
    made = invoke(*args, "-o", str(one), "--no-cache", "--workers", "1")
    assert made.exit_code == 0, made.output
    made = invoke(*args, "-o", str(two), "--no-cache", "--workers", "2")
    assert made.exit_code == 0, made.output
    assert comparable(two) == comparable(one)
    assert executions(one) == []
    [execution] = executions(two)
    assert (execution["executor"], execution["workers"], execution["cells"]) == ("processes", 2, 4)
    assert execution["lost"] == []


@pytest.mark.slow  # two matrix runs, one of them starting two worker processes
def test_a_matrix_over_two_workers_equals_the_one_process_matrix(tmp_path):
    one, two = tmp_path / "one" / "run", tmp_path / "two" / "run"
    made = invoke("run", *MATRIX, "--seed", "5", "--no-score", "-o", str(one), "--workers", "1")
    assert made.exit_code == 0, made.output
    made = invoke("run", *MATRIX, "--seed", "5", "--no-score", "-o", str(two), "--workers", "2")
    assert made.exit_code == 0, made.output
    assert comparable(two) == comparable(one)
    assert [(e["executor"], e["workers"]) for e in executions(two)] == [("processes", 2)]


# ─── a worker killed, the parent stopped ────────────────────────────────────


def gated_run(out: Path, base_url: str, *more: str) -> list[str]:
    """Two rollouts of 6 turns; the model under evaluation is the gated server's."""
    args = ["run", "mania_patient", "--turns", "6", "--rollouts", "2", "-o", str(out)]
    args += ["--persona-model", "scripted/varied", "--target", "openai/gated"]
    args += ["--judge-model", "scripted/echo", "--base-url", base_url, "--seed", "8"]
    return [*args, "--no-score", "--no-cache", *more]


def workers_of(pid: int) -> list[int]:
    """The worker processes ``pid`` started (``multiprocessing``'s spawned children; not its
    resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and "spawn_main" in command:
            found.append(int(entry.name))
    return sorted(found)


def finish(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LOOM_SIM), *command], capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.slow  # starts the real command three times
def test_a_killed_worker_stops_the_run_and_resume_completes_it(tmp_path):
    """SIGKILL to one worker with calls in flight: the parent notices, stops the other worker,
    and ends with one sentence naming the command that continues; that command completes the
    run with the turns an uninterrupted run makes."""
    killed, straight = tmp_path / "killed" / "run", tmp_path / "straight" / "run"
    with GatedServer(answered=3) as gate:
        proc = subprocess.Popen(
            [str(LOOM_SIM), *gated_run(killed, gate.base_url, "--workers", "2")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert gate.held.wait(120), "the run did not reach its fourth call"
            workers = workers_of(proc.pid)
            assert len(workers) == 2, workers
            os.kill(workers[0], signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        gate.release()
        assert proc.returncode == 1, err
        assert "Traceback" not in err and "internal error" not in err
        said = f"worker process {workers[0]} was killed by SIGKILL before its rollouts ended"
        assert said in err, err
        assert f"every completed turn is saved in {killed}. Continue with: " in err
        again = err.split("Continue with: ", 1)[1].splitlines()[0]
        assert again == (
            f"loom-sim run --resume {killed} --base-url {gate.base_url} --no-score --no-cache "
            "--workers 2"
        )
        [execution] = executions(killed)
        assert execution["lost"], execution  # the killed worker's cells, unfinished
        for label in execution["lost"]:  # by their files: none of them wrote its transcript
            assert not (killed / label / "transcript.json").exists(), label
        continued = finish(shlex.split(again)[1:])
        assert continued.returncode == 0, continued.stderr
        uninterrupted = finish(gated_run(straight, gate.base_url))
        assert uninterrupted.returncode == 0, uninterrupted.stderr
    assert records(killed) == records(straight)
    for index in (0, 1):
        turns = (killed / f"rollout_{index:03d}" / "turns.jsonl").read_text().splitlines()
        assert [json.loads(line)["turn"] for line in turns] == list(range(6))


@pytest.mark.slow  # starts the real command three times, on a pseudo-terminal
@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_ctrl_c_stops_every_worker_and_resume_completes_the_run(tmp_path, stop):
    """Ctrl-C at a terminal (SIGINT to the whole process group: the workers ignore it, the
    parent tells them to stop), or SIGTERM to the parent alone: every worker winds down, the
    run says what was saved and the exact command that continues, exits 130; that command
    completes it."""
    stopped, straight = tmp_path / "stopped" / "run", tmp_path / "straight" / "run"
    with GatedServer(answered=3) as gate:
        with Terminal(*gated_run(stopped, gate.base_url, "--workers", "2")) as terminal:
            terminal.wait_for(gate.held.is_set, timeout=120, what="a model call held at the gate")
            workers = workers_of(terminal.proc.pid)
            assert len(workers) == 2, workers
            if stop == "ctrl-c":
                terminal.ctrl_c()
            else:
                os.kill(terminal.proc.pid, signal.SIGTERM)
            assert terminal.finish(timeout=60) == 130
            screen = "".join(line.rstrip("\n") for line in terminal.screen.display)
            output = terminal.output
        assert "Traceback" not in output and "internal error" not in output
        assert "Ctrl-C again to quit at once" in screen
        assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
        command = (
            f"loom-sim run --resume {stopped} --base-url {gate.base_url} --no-score --no-cache "
            "--workers 2"
        )
        assert f"saved in {stopped}. Continue with: {command}" in screen, screen
        gate.release()
        continued = finish(shlex.split(command)[1:])
        assert continued.returncode == 0, continued.stderr
        uninterrupted = finish(gated_run(straight, gate.base_url))
        assert uninterrupted.returncode == 0, uninterrupted.stderr
    assert records(stopped) == records(straight)


# ─── the pieces ─────────────────────────────────────────────────────────────


def test_shares_add_up_to_the_whole():
    assert [share(10, 3, k) for k in range(3)] == [4, 3, 3]
    assert [share(4, 2, k) for k in range(2)] == [2, 2]
    assert sum(share(64, 5, k) for k in range(5)) == 64


def test_as_many_workers_as_memory_holds():
    per_worker = IN_PROCESS_WORKER_BYTES + 2 * 150 * 1024**2
    assert by_memory(per_worker, None) is None  # the system does not say
    assert by_memory(per_worker, per_worker) == 1
    assert by_memory(per_worker, int(3 * per_worker / 0.8)) == 3


def test_the_executor_is_registered_and_workers_choose_it():
    from loom_sim.cli.options import chosen_executor

    assert "processes" in EXECUTORS
    assert isinstance(open_executor("processes", ExecutorSettings(workers=2)), ProcessesExecutor)
    assert chosen_executor("local", None, None, 1).name == "local"
    assert chosen_executor("local", None, None, None).name == "local"
    chosen = chosen_executor("local", None, None, 3)
    assert (chosen.name, chosen.workers) == ("processes", 3)
    assert chosen_executor("local", None, None, 0).workers is None  # auto
    with pytest.raises(LoomError, match="is for this machine"):
        chosen_executor("ray", None, None, 2)
    with pytest.raises(LoomError, match="--address is for a cluster"):
        chosen_executor("processes", "ray://head:10001", None, 2)


@pytest.mark.parametrize("given", ["0", "many", "-2"])
def test_a_bad_worker_count_is_one_sentence(given):
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["run", "mania_patient", "--workers", given])
    assert result.exit_code == 2
    assert "--workers" in result.output and "Traceback" not in result.output


def _store(path: str, worker: int, count: int) -> None:
    cache = ResponseCache(path)
    for n in range(count):
        response = ModelResponse(f"{worker}-{n}", Usage(1, 1, 0.0), "scripted/x")
        cache.put(f"{worker}-{n}", "scripted/x", response)
        cache.get(f"{(worker + 1) % 3}-{n}")  # a read beside the other writers (a hit or not)
    assert cache.problem is None, cache.problem
    cache.close()


@pytest.mark.slow  # three processes
def test_the_response_cache_takes_writes_from_several_processes(tmp_path):
    """The workers share the run's cache file: SQLite in WAL mode, each write one
    transaction, so three processes writing at once lose nothing and break nothing."""
    path = str(tmp_path / "responses.sqlite3")
    ResponseCache(path).close()  # as the parent opens it before the workers start
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_store, args=(path, k, 200)) for k in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    assert [p.exitcode for p in processes] == [0, 0, 0]
    with ResponseCache(path) as cache:
        assert cache.stats().entries == 600
        assert cache.get("2-199") is not None


@pytest.mark.slow  # two runs, one of them starting two worker processes
def test_one_budget_holds_across_the_workers(tmp_path):
    """A turn costs c and the budget is 1.5 c, two workers with a rollout each at a time: the
    parent sums both workers' spending and tells them, so every rollout stops on the run's
    budget. The first two may each make a second turn before hearing of the other's first (as
    two rollouts in one process may); every later one makes only the turn a rollout always
    makes, as in one process."""
    price = "100000/100000"  # USD per million tokens
    config = str(quick_config(tmp_path))
    common = [
        "--seed", "1", "--persona-model", "openai/persona", "--judge-model", "scripted/judge",
        "--price", f"openai/a={price}", "--price", f"openai/persona={price}",
        "--no-score", "--no-cache", "--target", "openai/a",
    ]  # fmt: skip
    with FakeOpenAIServer() as server:
        first = tmp_path / "first"
        made = invoke(
            "run", config, "--turns", "1", "-o", str(first), "--base-url", server.base_url,
            *common,
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        turn = json.loads((first / "rollout_000" / "turns.jsonl").read_text())
        cost = sum(u["cost_usd"] for u in turn["usage"].values())
        out = tmp_path / "run"
        made = invoke(
            "run", config, "--rollouts", "4", "--turns", "4", "--max-cost", str(1.5 * cost),
            "--concurrency", "2", "--workers", "2", "-o", str(out),
            "--base-url", server.base_url, *common,
        )  # fmt: skip
    assert made.exit_code == 0, made.output
    transcripts = [
        json.loads((out / f"rollout_{k:03d}" / "transcript.json").read_text()) for k in range(4)
    ]
    assert {t["stop_reason"] for t in transcripts} == {"cost_budget"}
    made_turns = [len(t["turns"]) for t in transcripts]
    assert made_turns[2:] == [1, 1] and set(made_turns[:2]) <= {1, 2}, made_turns
    assert [(e["executor"], e["workers"]) for e in executions(out)] == [("processes", 2)]


def _cells(count: int, *specs: str) -> list:
    plan = SimpleNamespace(models={f"role{k}": spec for k, spec in enumerate(specs)})
    return [SimpleNamespace(plan=plan) for _ in range(count)]


def test_auto_gives_a_worker_per_core_within_the_cells_concurrency_and_http_limits(monkeypatch):
    from loom_sim.executors import worker_count

    monkeypatch.setattr(worker_count.cpu, "cores", lambda: 8)
    remote = _cells(100, "openai/a", "scripted/judge")
    assert worker_count.choose_workers(None, remote, 64, {}) == 8
    assert worker_count.choose_workers(None, remote[:3], 64, {}) == 3  # the cells
    assert worker_count.choose_workers(None, remote, 2, {}) == 2  # --concurrency
    assert worker_count.choose_workers(5, remote, 64, {}) == 5  # as asked
    assert worker_count.choose_workers(None, remote, 64, {"openai": 4, "anthropic": 2}) == 4
    # scripted models only: a worker per 64 rollouts (their start-up outweighs less work)
    scripted = _cells(100, "scripted/varied", "scripted/judge")
    assert worker_count.choose_workers(None, scripted, 64, {}) == 1
    assert worker_count.choose_workers(None, _cells(300, "scripted/varied"), 300, {}) == 4
    assert worker_count.choose_workers(3, scripted, 64, {}) == 3  # as asked
    embedded = _cells(100, "local/smollm2", "scripted/judge")
    monkeypatch.setattr(worker_count, "available_memory", lambda: None)
    assert worker_count.choose_workers(None, embedded, 64, {}) == 1  # memory unknown: one
    assert worker_count.choose_workers(None, remote, 64, {}) == 8
    monkeypatch.setattr(worker_count, "available_memory", lambda: 2 * 1024**3)
    assert worker_count.choose_workers(None, remote, 64, {}) == 3  # 1.6 GiB, 512 MiB each
    assert worker_count.choose_workers(None, embedded, 64, {}) == 1  # 1.6 GiB, 1.2 GiB each
    monkeypatch.setattr(worker_count, "available_memory", lambda: 64 * 1024**3)
    assert worker_count.choose_workers(None, embedded, 64, {}) == 8  # a core each


@pytest.mark.slow  # two runs, each starting two worker processes
def test_the_workers_share_the_runs_response_cache(tmp_path, monkeypatch):
    """Every worker stores its replies in the run's cache and serves from it: a second run of
    the same plan asks the server nothing, and the closing line counts every worker's hits."""
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(tmp_path / "cache"))  # the workers inherit it
    with FakeOpenAIServer() as server:
        said = []
        for name in ("first", "second"):
            made = invoke(
                "run", "mania_patient", "--turns", "2", "--rollouts", "4", "--seed", "1",
                "--persona-model", "openai/p", "--target", "openai/t",
                "--judge-model", "scripted/judge", "--base-url", server.base_url,
                "--no-score", "--workers", "2", "-o", str(tmp_path / name),
            )  # fmt: skip
            assert made.exit_code == 0, made.output
            said.append(made.output)
        calls = server.stats()["by_route"]["/v1/chat/completions"]
    assert calls == 4 * 2 * 2  # the first run's: every turn, two calls
    assert "response cache: 0 replies reused, 16 stored" in said[0]
    assert "response cache: 16 replies reused, 0 stored" in said[1]


def test_plugins_registered_from_code_keep_the_rollouts_in_this_process(tmp_path):
    """A scorer added for a ``with`` block exists in this process only (a worker could not
    even validate a config that names it): auto runs the rollouts here, and an explicit
    --workers says so."""
    args = ["run", "mania_patient", "--turns", "1", "--rollouts", "2", *SCRIPTED, "--seed", "2"]
    with extra_scorers():
        made = invoke(*args, "--no-score", "--workers", "auto", "-o", str(tmp_path / "auto"))
        assert made.exit_code == 0, made.output
        with pytest.warns(UserWarning, match="scorer/reply_length registered from code"):
            made = invoke(*args, "--no-score", "--workers", "2", "-o", str(tmp_path / "two"))
        assert made.exit_code == 0, made.output
    assert executions(tmp_path / "auto") == executions(tmp_path / "two") == []


@pytest.mark.slow  # one run starting its workers
def test_a_run_splits_over_a_worker_per_core_unless_told_otherwise(tmp_path, monkeypatch):
    """No --workers and no LOOM_SIM_WORKERS: ``auto``. Rollouts against a server go to a
    worker per core this process may use (each rollout its own, here); scripted ones, too few
    to pay for a worker's start-up, and ``--executor local`` stay in this process."""
    monkeypatch.delenv("LOOM_SIM_WORKERS", raising=False)
    cores = len(os.sched_getaffinity(0))
    base = ["run", "mania_patient", "--turns", "1", "--rollouts", "2", "--seed", "1", "--no-score"]
    with FakeOpenAIServer() as server:
        remote = ["--persona-model", "openai/p", "--target", "openai/t", "--judge-model",
                  "scripted/judge", "--base-url", server.base_url]  # fmt: skip
        made = invoke(*base, *remote, "-o", str(tmp_path / "remote"))
        assert made.exit_code == 0, made.output
        made = invoke(*base, *remote, "--executor", "local", "-o", str(tmp_path / "local"))
        assert made.exit_code == 0, made.output
    made = invoke(*base, *SCRIPTED, "-o", str(tmp_path / "scripted"))
    assert made.exit_code == 0, made.output
    split = executions(tmp_path / "remote")
    if cores > 1:
        assert [(e["executor"], e["workers"]) for e in split] == [("processes", 2)]
    else:
        assert split == []
    assert executions(tmp_path / "local") == executions(tmp_path / "scripted") == []
