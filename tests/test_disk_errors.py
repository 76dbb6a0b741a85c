"""A full disk and a read-only results folder: which path failed and why, what was kept, and
the command that continues — never "internal error", never a lost turn."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli

MANIA = Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml"
SCRIPTED = ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
SCRIPTED += ["--judge-model", "scripted/echo"]


def run(*args: str):
    result = CliRunner().invoke(cli, ["run", *args])
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_disk_names_the_file_keeps_the_turns_and_says_how_to_continue(tmp_path):
    out = tmp_path / "run"
    folder = out / "rollout_000"
    folder.mkdir(parents=True)
    # The trace lands on a device that is always full: the kernel's ENOSPC, for real.
    (folder / "trace.jsonl").symlink_to("/dev/full")
    result = run(str(MANIA), "--turns", "3", "-o", str(out), "--seed", "1", "--no-score", *SCRIPTED)
    assert result.exit_code == 1
    trace = folder / "trace.jsonl"
    assert f"cannot write {trace}: no space left on device" in result.stdout
    assert result.stderr.strip().endswith(
        f"Continue them with: loom-sim run --resume {out} --no-score"
    )
    kept = (folder / "turns.jsonl").read_text().splitlines()
    assert len(kept) == 1  # the turn completed before its trace could not be written
    transcript = json.loads((folder / "transcript.json").read_text())
    assert transcript["status"] == "error" and "no space left" in transcript["error"]
    # space again: the printed command finishes the run
    trace.unlink()
    continued = run("--resume", str(out), "--no-score")
    assert continued.exit_code == 0, continued.output
    done = json.loads((folder / "transcript.json").read_text())
    assert [t["turn"] for t in done["turns"]] == [0, 1, 2]


@pytest.fixture
def read_only(tmp_path):
    """A folder nothing can be written to: mode 555, or a read-only mount for root."""
    path = tmp_path / "results"
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        yield path
        path.chmod(0o755)
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"root cannot mount a read-only folder here ({mounted.stderr.strip()!r})")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def test_a_read_only_results_folder_is_one_sentence_before_any_model_call(read_only):
    out = read_only / "run"
    result = run(str(MANIA), "--turns", "2", "-o", str(out), *SCRIPTED)
    assert result.exit_code == 1
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("note:")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"cannot write {out}: ")
    assert "read-only" in lines[0] or "permission denied" in lines[0]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_disk_that_fills_while_scoring_keeps_the_run_and_says_how_to_continue(tmp_path):
    out = tmp_path / "run"
    assert run(str(MANIA), "--turns", "2", "-o", str(out), "--no-score", *SCRIPTED).exit_code == 0
    folder = out / "rollout_000"
    before = (folder / "transcript.json").read_bytes()
    # the transcript's atomic write goes through its .tmp file: that lands on a full device
    (folder / "transcript.json.tmp").symlink_to("/dev/full")
    result = run("--resume", str(out))
    assert result.exit_code == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(f"cannot write {folder / 'transcript.json'}: no space left on device")
    assert message.endswith(f"Free the space, then continue with: loom-sim run --resume {out}")
    assert (folder / "transcript.json").read_bytes() == before  # the old version intact
    continued = run("--resume", str(out))  # space again (the failed write removed the link)
    assert continued.exit_code == 0, continued.output
    assert all(t["scores"] for t in json.loads((folder / "transcript.json").read_text())["turns"])
