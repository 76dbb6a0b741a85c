"""One writer per run folder: the lock that ``run``, ``run --resume``, ``score``, ``harness
run``, ``debate`` and ``merge`` hold, tried the way it fails in practice — by real processes
started together on one folder — and waited on by events (a model call held at a gate, a
process that says it holds the lock), never by sleeps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.core.lock import LOCK_FILE, FolderInUse, hold, holder
from tests.gated_server import GatedServer
from tests.harness_support import STAND_INS, toy_pack
from tests.terminal import LOOM_SIM

HOLDER = """
import sys
from pathlib import Path
from loom_sim.core.lock import hold
with hold(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes stdin (or kills this process)
"""


class Holder:
    """Another process holding ``folder``'s lock until :meth:`stop` or :meth:`kill`."""

    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "held\n"  # it holds the lock now

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=60)


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def test_the_lock_names_its_holder_and_dies_with_it(tmp_path):
    folder = tmp_path / "run"
    assert holder(folder) is None and not folder.exists()  # asking creates nothing
    other = Holder(folder)
    try:
        assert holder(folder) == other.pid
        before = listing(folder)
        with pytest.raises(FolderInUse) as refused:
            with hold(folder):
                pytest.fail("took a lock another process holds")
        assert refused.value.pid == other.pid
        assert str(refused.value) == (
            f"{folder} is in use by loom-sim process {other.pid}: one process writes a run "
            "folder at a time; wait for it to end, or stop it first"
        )
        assert listing(folder) == before
    finally:
        other.kill()  # as kill -9 would: the kernel releases the lock, nothing to clean
    assert (folder / LOCK_FILE).is_file() and holder(folder) is None
    with hold(folder):
        assert holder(folder) == os.getpid()
        with hold(folder):  # `run` scoring what it ran: the same process nests
            assert holder(folder) == os.getpid()
        assert holder(folder) == os.getpid()  # the inner release kept the outer hold
        refused = subprocess.run(
            [sys.executable, "-c", HOLDER, str(folder)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert refused.returncode != 0
        assert f"in use by loom-sim process {os.getpid()}" in refused.stderr
    assert holder(folder) is None


def loom(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LOOM_SIM), *args], capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.slow
def test_three_runs_started_at_once_on_one_folder_one_runs_two_are_refused(tmp_path):
    """Three ``run -o SAME`` at once: whichever takes the lock first runs, and its first call
    to the model under evaluation waits at the gate, so the other two meet the lock whatever
    the scheduling; they are refused naming its pid. Meanwhile ``run --resume`` and ``score``
    are refused the same way and ``runs`` says the run is running. Then the gate opens and the
    one run ends with each turn written once."""
    results = tmp_path / "results"
    out = results / "same"
    with GatedServer(answered=0) as gate:
        args = [str(LOOM_SIM), "run", "mania_patient", "--turns", "3", "-o", str(out)]
        args += ["--persona-model", "scripted/varied", "--target", "openai/gated"]
        args += ["--judge-model", "scripted/echo", "--base-url", gate.base_url]
        args += ["--seed", "7", "--no-score", "--no-cache"]
        procs = [
            subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)
        ]
        try:
            assert gate.held.wait(120), "no run reached the model under evaluation"
            winner = holder(out)
            assert winner in {p.pid for p in procs}
            for proc in procs:
                if proc.pid == winner:
                    continue
                stdout, stderr = proc.communicate(timeout=120)
                assert proc.returncode == 1, stderr
                assert stderr.strip().splitlines() == [
                    f"{out} is in use by loom-sim process {winner}: one process writes a run "
                    "folder at a time; wait for it to end, or stop it first"
                ]
                assert stdout == ""
            for command in (["run", "--resume", str(out)], ["score", str(out)]):
                refused = loom(*command)
                assert refused.returncode == 1
                assert f"in use by loom-sim process {winner}" in refused.stderr
            listed = loom("runs", str(results), "--json")
            row = json.loads(listed.stdout)
            assert (row["status"], row["running"], row["pid"]) == ("partial", True, winner)
            shown = subprocess.run(
                [str(LOOM_SIM), "runs", str(results)],
                capture_output=True,
                text=True,
                timeout=180,
                env={**os.environ, "COLUMNS": "200"},
                check=False,
            )
            assert f"running (pid {winner})" in shown.stdout and "resumable" not in shown.stdout
        finally:
            gate.release()
        ran = next(p for p in procs if p.pid == winner)
        stdout, stderr = ran.communicate(timeout=180)
        assert ran.returncode == 0, stderr
    turns = [json.loads(line)["turn"] for line in (out / "rollout_000" / "turns.jsonl").open()]
    assert turns == [0, 1, 2]
    assert holder(out) is None
    listed = loom("runs", str(results), "--json")
    row = json.loads(listed.stdout)
    assert (row["status"], row["running"], row["pid"]) == ("complete", False, None)


def test_every_writing_command_is_refused_on_a_folder_in_use(tmp_path):
    """``harness run``, ``debate`` and ``merge`` (new folders and resumes), ``run --resume``
    and ``score``: each says who holds the folder, exits non-zero, and changes nothing."""
    held = tmp_path / "held"
    held.mkdir()
    (held / "notes.txt").write_text("mine\n")
    shard = tmp_path / "shard"
    shard.mkdir()
    pack = toy_pack(tmp_path / "pack")
    models = [a for role, spec in STAND_INS.items() for a in ("--model", f"{role}={spec}")]
    other = Holder(held)
    try:
        before = listing(held)
        commands = [
            ["run", "--resume", str(held)],
            ["score", str(held)],
            ["harness", "run", str(pack), "-o", str(held), *models],
            ["harness", "run", "--resume", str(held)],
            ["debate", "planted_horizon", "-o", str(held)],
            ["debate", "--resume", str(held)],
            ["merge", str(shard), "-o", str(held)],
        ]
        for command in commands:
            result = CliRunner().invoke(cli, command)
            assert result.exit_code == 1, (command, result.output)
            assert result.output.strip() == (
                f"{held} is in use by loom-sim process {other.pid}: one process writes a run "
                "folder at a time; wait for it to end, or stop it first"
            ), command
            assert listing(held) == before, command
    finally:
        other.stop()
    assert holder(held) is None


@pytest.mark.slow
def test_a_killed_run_leaves_no_lock_to_clean(tmp_path):
    """kill -9 in the middle of a run: the next ``--resume`` simply proceeds."""
    out = tmp_path / "run"
    with GatedServer(answered=1) as gate:
        args = [str(LOOM_SIM), "run", "mania_patient", "--turns", "3", "-o", str(out)]
        args += ["--persona-model", "scripted/varied", "--target", "openai/gated"]
        args += ["--judge-model", "scripted/echo", "--base-url", gate.base_url]
        args += ["--seed", "7", "--no-score", "--no-cache"]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert gate.held.wait(120), "the run did not reach its second turn"
            assert holder(out) == proc.pid
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        assert holder(out) is None
        gate.release()
        resumed = loom("run", "--resume", str(out), "--base-url", gate.base_url, "--no-cache")
    assert resumed.returncode == 0, resumed.stderr
    turns = [json.loads(line)["turn"] for line in (out / "rollout_000" / "turns.jsonl").open()]
    assert turns == [0, 1, 2]


@pytest.fixture
def partial_run(tmp_path) -> Path:
    """A results folder holding one run whose rollout looks still going (no transcript)."""
    out = tmp_path / "results" / "going"
    made = CliRunner().invoke(
        cli,
        ["run", "mania_patient", "--turns", "2", "-o", str(out), "--no-score", "--seed", "3"]
        + ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
        + ["--judge-model", "scripted/echo"],
    )
    assert made.exit_code == 0, made.output
    (out / "rollout_000" / "transcript.json").unlink()
    return out


async def test_runs_and_serve_say_running_not_resumable_for_a_folder_in_use(partial_run):
    import httpx

    from loom_sim.runs.catalog import find_runs
    from loom_sim.web.app import create_app

    results, out = partial_run.parent, partial_run
    [idle] = find_runs(results)
    assert (idle.status, idle.running, idle.resumable) == ("partial", False, True)
    other = Holder(out)
    try:
        [going] = find_runs(results)
        assert (going.status, going.running, going.resumable) == ("partial", True, False)
        assert going.holder == other.pid
        app = create_app(results, poll_s=0.05, lifetime=5)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            listed = (await http.get("/")).text
            page = (await http.get("/run/going")).text
        assert '<span class="muted">running</span>' in listed and "resumable" not in listed
        assert f"Running now (loom-sim process {other.pid})" in page
        assert "loom-sim run --resume" not in page
    finally:
        other.stop()
    [after] = find_runs(results)
    assert (after.running, after.resumable) == (False, True)
