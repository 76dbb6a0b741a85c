"""``loom-sim harness`` end to end, as a user runs it: the shipped pack against the shipped
studio over a real PTY with scripted models (byte-identical summaries and scorecards from one
seed), a run killed and resumed with no turn lost or repeated, report, view, trace, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness_support import STAND_INS, command, lines, toy_pack

SESSIONS = ("drop_lookbook_rescue-1", "tattoo_flash_direction_find-1", "creator_thumbnail_pack-1")
MODELS = [arg for role, spec in STAND_INS.items() for arg in ("--model", f"{role}={spec}")]


def loom(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "140"}
    result = subprocess.run(
        [_bin(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _bin() -> str:
    return str(Path(sys.executable).parent / "loom-sim")


def canned_run(out: Path) -> subprocess.CompletedProcess:
    return loom(
        "harness",
        "run",
        "studio_benchmarks",
        "--target",
        "studio-canned",
        "--seed",
        "11",
        *MODELS,
        "-o",
        str(out),
    )


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("harness") / "first"
    result = canned_run(out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.slow
def test_the_shipped_pack_runs_against_the_studio_and_reproduces(first_run, tmp_path):
    for name in SESSIONS:
        bundle = first_run / name
        summary = json.loads((bundle / "summary.json").read_text())
        assert summary["turns"] == len(lines(bundle / "reflections.jsonl")) >= 2
        assert (bundle / "session.cast").is_file() and (
            bundle / "target" / "events.jsonl"
        ).is_file()
        assert any((bundle / "target" / "out").iterdir())  # real images, made by the studio
    again = tmp_path / "again"
    assert canned_run(again).returncode == 0
    for name in SESSIONS:
        for file in ("summary.json", "scorecard.json"):
            assert (first_run / name / file).read_bytes() == (again / name / file).read_bytes()


@pytest.mark.slow
def test_report_view_and_trace_read_a_harness_run(first_run):
    report = loom("harness", "report", str(first_run))
    assert report.returncode == 0, report.stderr
    assert "| drop_lookbook_rescue | 1 | 1 |" in report.stdout and "pass^k" in report.stdout
    page = (first_run / "report.html").read_text()
    assert page.count("<svg") == 3 and "goal progress" in page and "<script" not in page
    data = json.loads((first_run / "report.json").read_text())
    row = data["scenarios"][0]
    assert row["wilson95"] == [0.2065, 1.0] and row["pass_hat_k"] == {"1": 1.0}
    view = loom("view", str(first_run / SESSIONS[0]))
    assert view.returncode == 0 and "reflection" in view.stdout and "/diagnose" in view.stdout
    several = loom("view", str(first_run))
    assert several.returncode == 1 and "holds 3 sessions; name one" in several.stderr
    trace = loom("trace", str(first_run / SESSIONS[1]), "--type", "Reflected")
    assert trace.returncode == 0 and "Reflected" in trace.stdout and "valid" in trace.stdout
    diagram = loom("diagram", "--machine", "harness")
    assert "plan_turn --> plan_turn: replan" in diagram.stdout


def test_a_killed_run_resumes_without_losing_or_repeating_a_turn(tmp_path):
    pack = toy_pack(tmp_path, budget={"max_turns": 6})
    answers = tmp_path / "user.json"  # index = assistant messages so far: setup, then turns
    answers.write_text(json.dumps([command("ok")] + [json.loads(command("wait"))] * 6))
    out = tmp_path / "run"
    args = [
        "harness",
        "run",
        str(pack),
        "--seed",
        "4",
        "-o",
        str(out),
        *MODELS,
        "--model",
        f"user=scripted/{answers}",
    ]
    proc = subprocess.Popen([_bin(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    turns = out / "toy-1" / "turns.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if turns.exists() and len(turns.read_bytes().splitlines()) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert 2 <= len(turns.read_bytes().splitlines()) < 6  # killed mid-run
    resumed = loom("harness", "run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    bundle = out / "toy-1"
    assert [r["turn"] for r in lines(turns)] == list(range(6))
    assert [r["turn"] for r in lines(bundle / "reflections.jsonl")] == list(range(6))
    transcript = [r for r in lines(bundle / "transcript.jsonl") if r["turn"] is not None]
    assert [r["turn"] for r in transcript] == [t for t in range(6) for _ in (0, 1)]
    assert len(lines(bundle / "setup.jsonl")) == 2  # the target was started again
    assert (bundle / "session.2.cast").is_file()
    ids = [r["id"] for r in lines(bundle / "trace.jsonl")]
    assert ids == sorted(set(ids))
    session = json.loads((bundle / "session.json").read_text())
    assert session["status"] == "done" and len(session["starts"]) == 2
    again = loom("harness", "run", "--resume", str(out))  # nothing left to do
    assert again.returncode == 0 and len(lines(turns)) == 6


def test_errors_are_one_plain_sentence(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from loom_sim.cli import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    cases = [
        (["harness", "run", "studio_benchmarks", "--scenario", "nope"], "no scenario named 'nope'"),
        (["harness", "run", "studio_benchmarks", "--target", "sudio"], "not a target of this pack"),
        (["harness", "run", "no_such_pack"], "no such file, and no shipped scenario pack"),
        (["harness", "run", "studio_benchmarks", "--model", "judge=x/y"], "unknown role"),
        (
            [
                "harness",
                "run",
                "studio_benchmarks",
                "--model",
                "user=nope/x",
                "-o",
                str(tmp_path / "r"),
            ],
            "unknown provider 'nope'",
        ),
        (
            [
                "harness",
                "run",
                "studio_benchmarks",
                "--model",
                "user=openai/gpt-4.1",
                "-o",
                str(tmp_path / "r"),
            ],
            "needs an API key: set OPENAI_API_KEY",
        ),
        (["harness", "run"], "give a PACK to run"),
        (["harness", "run", "--resume", str(tmp_path), "studio_benchmarks"], "leave out"),
        (["harness", "report", str(tmp_path)], "is not a harness run"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1 and message in result.stderr, (args, result.output)
        assert len(result.stderr.strip().splitlines()) <= 2, result.stderr
    assert not (tmp_path / "r").exists()  # nothing written for a run that cannot start


def test_a_dead_http_target_ends_the_session_in_error_with_the_resume_command(tmp_path):
    from tests.servers import free_port

    out = tmp_path / "run"
    result = loom(
        "harness",
        "run",
        "studio_benchmarks",
        "--scenario",
        "creator_thumbnail_pack",
        "--target",
        f"http:http://127.0.0.1:{free_port()}/v1",
        *MODELS,
        "-o",
        str(out),
    )
    assert result.returncode == 1
    assert "ended in error" in result.stderr and f"--resume {out}" in result.stderr
    session = json.loads((out / "creator_thumbnail_pack-1" / "session.json").read_text())
    assert session["stop_reason"] == "adapter_fatal" and "could not be reached" in session["error"]


def _running(marker: str) -> list[int]:
    """Processes whose command line mentions ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_ctrl_c_saves_the_turns_says_how_to_resume_and_leaves_no_process(tmp_path):
    pack = toy_pack(tmp_path, budget={"max_turns": 6})
    answers = tmp_path / "user.json"
    answers.write_text(json.dumps([json.loads(command("wait"))] * 7))
    out = tmp_path / "run"
    args = [
        "harness",
        "run",
        str(pack),
        "-o",
        str(out),
        *MODELS,
        "--model",
        f"user=scripted/{answers}",
    ]
    proc = subprocess.Popen(
        [_bin(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    turns = out / "toy-1" / "turns.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (turns.exists() and turns.read_bytes()):
        time.sleep(0.05)
    assert _running(str(tmp_path / "toy_chat.py"))  # the target is up
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1
    resume = f"Continue with: loom-sim harness run --resume {out}"
    assert f"interrupted; completed turns are saved. {resume}" in stderr
    assert "Traceback" not in stderr
    assert lines(turns) and not _running(str(tmp_path / "toy_chat.py"))
