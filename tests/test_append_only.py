"""turns.jsonl, trace.jsonl and score_trace.jsonl: one repair for a torn tail, one reader that
stops at damage instead of dropping what follows it, and envelope ids that never repeat."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.config import LoomConfig, load_config
from loom_sim.store.artifacts import TurnLog
from loom_sim.store.jsonl import DamagedFile, last_line
from loom_sim.store.trace import read_trace
from tests.harness import run_rollout

MANIA = Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml"


@pytest.fixture
def marcus() -> LoomConfig:
    return load_config(MANIA)


def ids(path: Path) -> list[int]:
    return [msgspec.json.decode(line)["id"] for line in path.read_bytes().splitlines()]


async def test_a_damaged_middle_line_stops_the_resume_and_keeps_every_turn(tmp_path, marcus):
    await run_rollout(tmp_path, marcus, 4)
    turns = tmp_path / "rollout_000" / "turns.jsonl"
    (tmp_path / "rollout_000" / "transcript.json").unlink()
    lines = turns.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"turn": 1, "persona": \n'
    turns.write_bytes(b"".join(lines))
    damaged = turns.read_bytes()
    with pytest.raises(DamagedFile) as caught:
        TurnLog(turns).load()
    assert caught.value.line == 2 and caught.value.after == 2
    assert f"{turns}:2: not a turn record" in str(caught.value)
    assert "head -n 1" in str(caught.value)
    transcript, _ = await run_rollout(tmp_path, marcus, 6)  # the rollout refuses, too
    assert transcript.status == "error" and "turns.jsonl:2" in transcript.error
    assert turns.read_bytes() == damaged  # turns 2 and 3 are still there


async def test_a_torn_trace_is_cut_before_the_resumed_run_appends(tmp_path, marcus):
    await run_rollout(tmp_path, marcus, 2)
    trace = tmp_path / "rollout_000" / "trace.jsonl"
    (tmp_path / "rollout_000" / "transcript.json").unlink()
    trace.write_bytes(trace.read_bytes() + b'{"id": 999, "ts": 1.0, "rollout": "rol')
    await run_rollout(tmp_path, marcus, 4)
    envelopes = read_trace(trace)  # every line decodes: nothing glued onto the torn one
    assert len(envelopes) == len(trace.read_bytes().splitlines())
    assert {e.turn for e in envelopes} == {0, 1, 2, 3}


async def test_envelope_ids_stay_unique_when_a_session_traced_an_unfinished_turn(tmp_path, marcus):
    """Ctrl-C flushes the trace of the turn in progress, whose record was never written: the
    resumed run must number on from the trace, not from the last record."""
    await run_rollout(tmp_path, marcus, 3)
    folder = tmp_path / "rollout_000"
    (folder / "transcript.json").unlink()
    turns = folder / "turns.jsonl"
    turns.write_bytes(b"".join(turns.read_bytes().splitlines(keepends=True)[:2]))
    await run_rollout(tmp_path, marcus, 4)
    numbers = ids(folder / "trace.jsonl")
    assert len(numbers) == len(set(numbers))
    assert numbers == sorted(numbers)


def test_scoring_twice_numbers_on_in_its_trace(tmp_path):
    out = tmp_path / "run"
    scripted = ["--persona-model", "scripted/varied", "--target", "scripted/varied"]
    runner = CliRunner()
    done = runner.invoke(
        cli,
        ["run", str(MANIA), "--turns", "2", "-o", str(out), "--judge-model", "scripted/echo"]
        + [*scripted, "--no-score"],
    )
    assert done.exit_code == 0, done.output
    for _ in range(2):
        scored = runner.invoke(cli, ["score", str(out), "--force"])
        assert scored.exit_code == 0, scored.output
    numbers = ids(out / "rollout_000" / "score_trace.jsonl")
    assert len(numbers) == len(set(numbers))


def test_last_line_reads_from_the_end(tmp_path):
    path = tmp_path / "f.jsonl"
    assert last_line(path) is None
    path.write_bytes(b"")
    assert last_line(path) is None
    path.write_bytes(b"torn")
    assert last_line(path) is None
    long = b"x" * 200_000
    path.write_bytes(b"a\n" + long + b"\n" + b"torn")
    assert last_line(path) == long + b"\n"
    path.write_bytes(b"only\n")
    assert last_line(path) == b"only\n"
