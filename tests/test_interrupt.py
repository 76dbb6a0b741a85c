"""Ctrl-C, as a person presses it: the real CLI on a pseudo-terminal, SIGINT to its process
group. The first stops the work cleanly and says what was saved and the exact command that
continues (with the flags the run was started with); the run then resumes; a second Ctrl-C
quits at once."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from loom_sim.testing.fake_server import FakeOpenAIServer
from tests.gated_server import GatedServer
from tests.terminal import LOOM_SIM, Terminal

pytestmark = pytest.mark.slow


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def unwrapped(terminal: Terminal) -> str:
    """The screen with its lines joined: a long message wraps at the terminal's width."""
    return "".join(line.rstrip("\n") for line in terminal.screen.display)


def judge_requests(trace: Path) -> Counter:
    """Judge requests in a score trace, by turn."""
    envelopes = [json.loads(line) for line in trace.read_text().splitlines()]
    return Counter(e["turn"] for e in envelopes if e["body"]["type"] == "Judge")


def resume(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LOOM_SIM), "run", "--resume", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_ctrl_c_during_the_rollouts_leaves_a_run_that_resumes(tmp_path):
    out = tmp_path / "run"
    turns = 12
    # The server answers four calls, then holds the next at its gate: Ctrl-C arrives with a
    # call in flight and most turns not run, whatever the machine's load.
    with GatedServer(answered=4) as slow, GatedServer(answered=10**9) as fast:
        args = ["run", "mania_patient", "--turns", str(turns), "--rollouts", "2", "-o", str(out)]
        args += ["--persona-model", "openai/fake", "--target", "openai/fake"]
        args += ["--judge-model", "scripted/echo", "--base-url", slow.base_url, "--seed", "3"]
        with Terminal(*args, "--no-score") as terminal:
            terminal.wait_for(slow.held.is_set, timeout=120, what="a model call held at the gate")
            terminal.ctrl_c()
            assert terminal.finish(timeout=30) == 130
            screen = unwrapped(terminal)
        saved = sum(lines(out / f"rollout_{i:03d}" / "turns.jsonl") for i in (0, 1))
        assert saved < 2 * turns  # it really stopped early
        assert "Traceback" not in terminal.output and "internal error" not in terminal.output
        assert "Ctrl-C again to quit at once" in screen
        assert "interrupted" in terminal.text  # the live table's rows say so
        command = f"loom-sim run --resume {out} --base-url {slow.base_url} --no-score"
        # how many turns were done when the gate closed depends on the two rollouts' order
        said = (
            "1 completed turn of 2 rollouts is"
            if saved == 1
            else f"{saved} completed turns of 2 rollouts are"
        )
        assert f"interrupted: {said} saved in {out}." in screen
        assert f"Continue with: {command}" in screen
        # The command it printed continues the run (here at a faster server's address).
        continued = resume(str(out), "--no-score", "--base-url", fast.base_url)
    assert continued.returncode == 0, continued.stderr
    for index in (0, 1):
        folder = out / f"rollout_{index:03d}"
        transcript = json.loads((folder / "transcript.json").read_text())
        assert [t["turn"] for t in transcript["turns"]] == list(range(turns))
        ids = [json.loads(line)["id"] for line in (folder / "trace.jsonl").read_text().splitlines()]
        assert len(ids) == len(set(ids))
    record = json.loads((out / "run.json").read_text())
    assert record["base_url"] == slow.base_url  # the run's, not this session's override


def test_ctrl_c_during_scoring_keeps_the_scored_turns_and_resumes(tmp_path):
    out = tmp_path / "run"
    turns = 12  # a network judge scores turns in lanes (4 here): three waves of them
    with FakeOpenAIServer(latency=0.4) as slow:
        args = ["run", "mania_patient", "--turns", str(turns), "-o", str(out), "--seed", "4"]
        args += ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
        args += ["--judge-model", "openai/fake", "--base-url", slow.base_url]
        with Terminal(*args) as terminal:
            terminal.wait_for(
                lambda: any(f"loom-sim score · {n}/" in terminal.text for n in range(1, turns)),
                timeout=120,
                what="the first turns judged",
            )
            terminal.ctrl_c()
            assert terminal.finish(timeout=30) == 130
            screen = unwrapped(terminal)
        assert "Traceback" not in terminal.output and "internal error" not in terminal.output
        assert "turns judged" in terminal.text  # the scoring table: per scorer, of how many
        assert "elapsed" in terminal.text and "left" in terminal.text
        command = f"loom-sim run --resume {out} --base-url {slow.base_url}"
        assert f"interrupted while scoring: every turn scored so far is saved in {out}." in screen
        assert f"Continue with: {command}" in screen
        scored = json.loads((out / "rollout_000" / "transcript.json").read_text())["turns"]
        done = sum(1 for t in scored if t["scores"])
        assert 0 < done < turns
        judged_before = judge_requests(out / "rollout_000" / "score_trace.jsonl")
        continued = resume(str(out), "--base-url", slow.base_url)
    assert continued.returncode == 0, continued.stderr
    assert "report:" in continued.stdout
    final = json.loads((out / "rollout_000" / "transcript.json").read_text())
    assert all(t["scores"] for t in final["turns"]) and final["scores"] is not None
    # turns scored before Ctrl-C were kept, not judged again
    assert [t["scores"] for t in final["turns"][:done]] == [t["scores"] for t in scored[:done]]
    judged_after = judge_requests(out / "rollout_000" / "score_trace.jsonl")
    for turn in range(done):
        assert judged_after[turn] == judged_before[turn]


#: The clean stop of the real commands, around work that cannot be cancelled and never ends by
#: itself (a thread reading a line nobody writes, as a llama.cpp reply cannot be cut short):
#: only the second signal can end this process, so what it prints is determined.
UNCANCELLABLE = """
import sys, trio
from loom_sim.core.signals import sigterm_as_ctrl_c
from loom_sim.core import interrupt

async def work():
    print("working", flush=True)
    await trio.to_thread.run_sync(sys.stdin.readline)

sigterm_as_ctrl_c()
try:
    interrupt.run(work)
except interrupt.Interrupted:
    print("stopped cleanly", flush=True)
"""


class Lines:
    """A pipe's lines, read as they come (a thread), waited for by content."""

    def __init__(self, stream) -> None:
        self.seen: list[str] = []
        self._ready = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._ready:
                self.seen.append(line)
                self._ready.notify_all()
        with self._ready:
            self.seen.append("")  # end of the stream
            self._ready.notify_all()

    def wait_for(self, text: str, timeout: float = 120) -> None:
        with self._ready:
            found = self._ready.wait_for(
                lambda: any(text in line for line in self.seen) or "" in self.seen, timeout
            )
            assert found and any(text in line for line in self.seen), (text, self.seen)

    @property
    def text(self) -> str:
        return "".join(self.seen)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_second_ctrl_c_quits_at_once(tmp_path, signum):
    """The first signal waits for the work in progress that cannot be cancelled; the second
    does not wait: the work here never ends, so only the second can have ended the process."""
    proc = subprocess.Popen(
        [sys.executable, "-c", UNCANCELLABLE],
        stdin=subprocess.PIPE,  # held open and never written: the work never ends
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        out.wait_for("working")
        proc.send_signal(signum)
        err.wait_for("Ctrl-C again to quit at once")
        proc.send_signal(signum)
        assert proc.wait(timeout=120) == 130
        err.wait_for("quit at once; completed turns are on disk")
    finally:
        proc.kill()
        proc.wait()
    assert "stopped cleanly" not in out.text
    assert "Traceback" not in err.text


def test_sigterm_stops_a_run_like_ctrl_c_and_it_resumes_to_the_same_turns(tmp_path):
    """SIGTERM, as a batch scheduler or a container sends it, to the process (not a terminal's
    group): the run stops cleanly, says what was saved and the command that continues, exits
    130; the command finishes the run with the turns an uninterrupted run makes. The model
    under evaluation answers three calls and holds the fourth at a gate, so the signal
    arrives with turn 3 in flight whatever the machine's load."""
    stopped, straight = tmp_path / "stopped", tmp_path / "straight"

    def command(out: Path, base_url: str) -> list[str]:
        args = [str(LOOM_SIM), "run", "mania_patient", "--turns", "6", "-o", str(out)]
        args += ["--persona-model", "scripted/varied", "--target", "openai/gated"]
        args += ["--judge-model", "scripted/echo", "--base-url", base_url, "--seed", "8"]
        return [*args, "--no-score", "--no-cache"]  # each run asks the model itself

    with GatedServer(answered=3) as gate:
        proc = subprocess.Popen(
            command(stopped, gate.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert gate.held.wait(120), "the run did not reach its fourth turn"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            gate.release()
            proc.kill()
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "internal error" not in err
        said = (
            f"interrupted: 3 completed turns of 1 rollout are saved in {stopped}. Continue with: "
        )
        assert said in err, err
        again = err.split(said, 1)[1].splitlines()[0]
        assert again == (
            f"loom-sim run --resume {stopped} --base-url {gate.base_url} --no-score --no-cache"
        )
        assert lines(stopped / "rollout_000" / "turns.jsonl") == 3
        continued = subprocess.run(
            [str(LOOM_SIM), *shlex.split(again)[1:]],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert continued.returncode == 0, continued.stderr
        uninterrupted = subprocess.run(
            command(straight, gate.base_url),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert uninterrupted.returncode == 0, uninterrupted.stderr
    assert turn_records(stopped) == turn_records(straight)
    assert [t["turn"] for t in turn_records(stopped)] == list(range(6))


def turn_records(run: Path) -> list[dict]:
    """A rollout's turns without what differs between any two runs (when, and how long) and
    the trace's numbering (a resumed rollout numbers its messages after those the interrupted
    turn traced, so that every id in trace.jsonl stays unique)."""
    volatile = {"timings", "started_at", "ended_at", "next_envelope_id"}
    records = (json.loads(line) for line in (run / "rollout_000" / "turns.jsonl").open())
    return [{k: v for k, v in r.items() if k not in volatile} for r in records]
