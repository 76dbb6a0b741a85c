"""Ctrl-C, as a person presses it: the real CLI on a pseudo-terminal, SIGINT to its process
group. The first stops the work cleanly and says what was saved and the exact command that
continues (with the flags the run was started with); the run then resumes; a second Ctrl-C
quits at once."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from loom_sim.testing.fake_openai import FakeOpenAIServer
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
    with FakeOpenAIServer(latency=0.25) as slow, FakeOpenAIServer() as fast:
        args = ["run", "mania_patient", "--turns", str(turns), "--rollouts", "2", "-o", str(out)]
        args += ["--persona-model", "openai/fake", "--target", "openai/fake"]
        args += ["--judge-model", "scripted/echo", "--base-url", slow.base_url, "--seed", "3"]
        with Terminal(*args, "--no-score") as terminal:
            terminal.wait_for(
                lambda: min(lines(out / f"rollout_{i:03d}" / "turns.jsonl") for i in (0, 1)) >= 2,
                timeout=90,
                what="two turns in each rollout",
            )
            terminal.ctrl_c()
            assert terminal.finish(timeout=30) == 130
            screen = unwrapped(terminal)
        saved = sum(lines(out / f"rollout_{i:03d}" / "turns.jsonl") for i in (0, 1))
        assert saved < 2 * turns  # it really stopped early
        assert "Traceback" not in terminal.output and "internal error" not in terminal.output
        assert "Ctrl-C again to quit at once" in screen
        assert "interrupted" in terminal.text  # the live table's rows say so
        command = f"loom-sim run --resume {out} --base-url {slow.base_url} --no-score"
        assert f"interrupted: {saved} completed turns of 2 rollouts are saved in {out}." in screen
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


def test_a_second_ctrl_c_quits_at_once(tmp_path):
    """The first Ctrl-C waits for the embedded model's generation in progress (it cannot be
    cancelled); the second does not wait."""
    out = tmp_path / "run"
    args = ["run", "mania_patient", "--turns", "3", "-o", str(out), "--no-score"]
    args += ["--persona-model", "local/smollm2", "--target", "scripted/varied"]
    args += ["--judge-model", "scripted/echo", "--seed", "5"]
    with Terminal(*args) as terminal:
        terminal.wait_for(lambda: "running" in terminal.text, timeout=60, what="the live table")
        time.sleep(1.0)  # the persona's first call is under way in llama.cpp
        terminal.ctrl_c()
        terminal.wait_for(
            lambda: "Ctrl-C again" in unwrapped(terminal), timeout=10, what="the first notice"
        )
        pressed = time.monotonic()
        terminal.ctrl_c()
        assert terminal.finish(timeout=10) == 130
        quit_after = time.monotonic() - pressed
        screen = unwrapped(terminal)
    assert "quit at once" in screen, screen
    assert "Traceback" not in terminal.output
    assert quit_after < 2.0, f"took {quit_after:.1f} s to quit"
