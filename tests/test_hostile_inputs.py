"""Hostile configs and damaged run files, each through the real command line.

Every case is something a person or a broken disk can hand loom-sim: an alias bomb, a config
nested ten thousand deep, a FIFO, a boolean where a count belongs, a transcript cut in the
middle, a trace of garbage. Each must end the same way: a non-zero exit, one plain line that
names the file (and the line where there is one), no traceback, no "internal error", in under
five seconds of work; a case that hangs fails the test after 30 s instead of stalling CI.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
LIMIT_S = 5.0
SCRIPTED = [
    "--persona-model",
    "scripted/varied",
    "--target",
    "scripted/varied",
    "--judge-model",
    "scripted/echo",
]

VALID = """\
schema_version: "0.1.0"
persona:
  identity:
    name: Ada
trajectory:
  mode: fixed_length
  expected_turns: 20
  dimensions:
    tension:
      curve: linear
      start_value: 0.1
      end_value: 0.8
  phases:
    - name: early
      end_condition: {type: pct, value: 0.5}
    - name: late
      end_condition: {type: pct, value: 1.0}
"""


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    cpu_s: float  # user + system time of the command: what it cost, whatever else runs

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


HANG_S = 30.0  # wall clock: no case comes near it unless it hangs (a quiet machine: ~1 s)


def loom(*args: str, cwd: Path | None = None) -> Outcome:
    """The real ``loom-sim``, bounded: a hang is a failure, not a stuck CI job."""
    env = {k: v for k, v in os.environ.items() if k != "LOOM_SIM_DEBUG"}
    env["COLUMNS"] = "100"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run(
            [str(LOOM_SIM), *args],
            capture_output=True,
            text=True,
            timeout=HANG_S,
            env=env,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loom-sim {' '.join(args)} hung (no answer in {HANG_S:g} s)")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, cpu)


def assert_refused(outcome: Outcome, *expected: str) -> str:
    """Non-zero, one line saying what and where, nothing that looks like a crash; returns
    the line."""
    assert outcome.code != 0, outcome.text
    assert "Traceback" not in outcome.text, outcome.text
    assert "internal error" not in outcome.text, outcome.text
    # Under 5 s of work each (CPU time: steady on a shared machine, and a busy loop shows in it)
    assert outcome.cpu_s < LIMIT_S, f"took {outcome.cpu_s:.1f} s of CPU"
    # validate prints its problems on stdout and a count on stderr; the rest say it on stderr
    said = outcome.stdout.strip().splitlines() if outcome.stdout.strip() else []
    lines = said or outcome.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{outcome.text}"
    for fragment in expected:
        assert re.search(fragment, lines[0]), f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


# ─── hostile configs ────────────────────────────────────────────────────────

LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def _nested_flow(depth: int) -> str:
    return VALID + "extra: " + "[" * depth + "]" * depth + "\n"


def _nested_block(depth: int) -> str:
    return VALID + "".join("  " * k + f"k{k}:\n" for k in range(depth)) + "  " * depth + "x: 1\n"


CONFIGS: dict[str, tuple[str | bytes, tuple[str, ...]]] = {
    # defect 1: 342 bytes that expand to 387 million strings
    "billion_laughs": (LAUGHS, (r"\.yaml:\d+:\d+", "alias")),
    "alias_to_itself": (VALID + "extra: &loop [*loop]\n", (r"\.yaml:\d+", "alias")),
    # defect 6: YAML 1.1 says `yes` is true; a count is not a yes
    "boolean_count": (
        VALID.replace("expected_turns: 20", "expected_turns: yes"),
        (r"\.yaml:7:\d+", "expected_turns", "integer", "yes|True|boolean"),
    ),
    "boolean_value": (
        VALID.replace("start_value: 0.1", "start_value: on"),
        (r"\.yaml:11:\d+", "start_value", "number"),
    ),
    "number_flag": (
        VALID + "interaction:\n  stagnation_detection:\n    enabled: 1\n",
        (r"\.yaml:20:\d+", "enabled", "boolean"),
    ),
    "quoted_count": (
        VALID.replace("expected_turns: 20", 'expected_turns: "20"'),
        (r"\.yaml:7:\d+", "expected_turns", "integer"),
    ),
    # defect 8: structure a parser recurses into
    "nested_10000_flow": (_nested_flow(10_000), (r"\.yaml", "nested")),
    "nested_3000_block": (_nested_block(3_000), (r"\.yaml", "nested")),
    "two_documents": (VALID + "---\n" + VALID, (r"\.yaml:\d+:\d+", "single document|one document")),
    "python_tag": (
        VALID + "extra: !!python/object/apply:os.system [echo hi]\n",
        (r"\.yaml:\d+:\d+", "python"),
    ),
    "unhashable_key": (VALID + "? [a, b]\n: c\n", (r"\.yaml:\d+:\d+",)),
    "top_level_list": ("- a\n- b\n", (r"\.yaml:1:1", "mapping")),
    "top_level_scalar": ("just words\n", (r"\.yaml:1:1", "mapping")),
    "merge_of_a_number": (VALID + "extra:\n  <<: 5\n", (r"\.yaml:\d+:\d+", "merge|mapping")),
    "not_utf8": (VALID.encode() + b"extra: \xff\xfe\n", (r"\.yaml", "UTF-8")),
    "nul_bytes": (VALID.encode() + b"\x00\x00", (r"\.yaml", "binary")),
    "empty": ("", (r"\.yaml", "empty")),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_a_hostile_config_is_one_located_line(case, tmp_path):
    text, expected = CONFIGS[case]
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert_refused(loom("validate", str(path)), *expected)


def test_the_alias_bomb_is_refused_by_run_too(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)
    assert_refused(loom("run", str(path), "--no-score", *SCRIPTED), "alias")


def test_a_config_over_the_size_limit_is_refused_unread(tmp_path):
    path = tmp_path / "huge.yaml"
    with path.open("wb") as out:  # 64 MB of comments: valid YAML, absurd as a config
        out.write(VALID.encode())
        out.write((b"# " + b"x" * 1021 + b"\n") * (64 * 1024))
    assert_refused(loom("validate", str(path)), r"huge\.yaml", "MB")


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    assert_refused(loom("validate", str(fifo)), r"config\.yaml", "not a regular file")
    assert_refused(loom("run", str(fifo), *SCRIPTED), r"config\.yaml", "not a regular file")


def test_a_device_is_refused(tmp_path):
    assert_refused(loom("validate", "/dev/zero"), "/dev/zero", "not a regular file")


# ─── damaged run files ──────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A real, finished, unscored run of four turns with scripted models."""
    out = tmp_path_factory.mktemp("hostile") / "run"
    done = subprocess.run(
        [str(LOOM_SIM), "run", "mania_patient", "--turns", "4", "--seed", "3", "-o", str(out)]
        + ["--no-score", *SCRIPTED],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def run_copy(finished_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    return copy


def _unfinish(run: Path) -> Path:
    """The run as a kill would leave it: turns on disk, no transcript."""
    (run / "rollout_000" / "transcript.json").unlink()
    return run / "rollout_000" / "turns.jsonl"


JUNK = b'{"turn": 1, "phase": \x01garbage}'


def _corrupt_line(path: Path, index: int, junk: bytes = JUNK) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[index] = junk + b"\n"
    path.write_bytes(b"".join(lines))


def test_a_corrupt_line_in_the_middle_of_turns_stops_resume_keeping_every_turn(run_copy):
    # defect 5: resume used to keep turn 0, silently drop turns 2 and 3 and redo them
    turns = _unfinish(run_copy)
    _corrupt_line(turns, 1)
    before = turns.read_bytes()
    line = assert_refused(loom("run", "--resume", str(run_copy)), r"turns\.jsonl:2\b")
    assert "2 valid" in line or "later" in line or "after" in line
    assert turns.read_bytes() == before  # nothing cut, nothing rewritten


DAMAGED: dict[str, tuple[Callable[[Path], list[str]], tuple[str, ...]]] = {}


def damage(name: str, *expected: str):
    def register(fn: Callable[[Path], list[str]]):
        DAMAGED[name] = (fn, expected)
        return fn

    return register


@damage("score_garbage_transcript", r"rollout_000/transcript\.json")
def _(run: Path) -> list[str]:
    (run / "rollout_000" / "transcript.json").write_text("{ this is not json")
    return ["score", str(run)]


@damage("score_transcript_of_wrong_shape", r"rollout_000/transcript\.json")
def _(run: Path) -> list[str]:
    (run / "rollout_000" / "transcript.json").write_text(json.dumps({"rollout": 5}))
    return ["score", str(run)]


@damage("report_garbage_transcript", r"rollout_000/transcript\.json")
def _(run: Path) -> list[str]:
    (run / "rollout_000" / "transcript.json").write_bytes(b"\x00\x01\x02")
    return ["report", str(run)]


@damage("view_garbage_transcript", r"transcript\.json")
def _(run: Path) -> list[str]:
    (run / "rollout_000" / "transcript.json").write_text("[]")
    return ["view", str(run / "rollout_000")]


@damage("resume_garbage_transcript", r"rollout_000/transcript\.json")
def _(run: Path) -> list[str]:
    (run / "rollout_000" / "transcript.json").write_text("nope")
    return ["run", "--resume", str(run), "--no-score"]


@damage("resume_garbage_run_json", r"run\.json")
def _(run: Path) -> list[str]:
    (run / "run.json").write_text("{]")
    return ["run", "--resume", str(run)]


@damage("score_run_json_of_wrong_shape", r"run\.json")
def _(run: Path) -> list[str]:
    data = json.loads((run / "run.json").read_text())
    data["turns"] = "many"
    (run / "run.json").write_text(json.dumps(data))
    return ["score", str(run)]


@damage("resume_turns_out_of_order", r"turns\.jsonl")
def _(run: Path) -> list[str]:
    turns = _unfinish(run)
    lines = turns.read_bytes().splitlines(keepends=True)
    turns.write_bytes(lines[1] + lines[0])
    return ["run", "--resume", str(run)]


@damage("resume_binary_turns", r"turns\.jsonl:1\b")
def _(run: Path) -> list[str]:
    turns = _unfinish(run)
    turns.write_bytes(b"\x00" * 64 + b"\n" + turns.read_bytes())
    return ["run", "--resume", str(run)]


@damage("view_turns_corrupt_in_the_middle", r"turns\.jsonl:3\b")
def _(run: Path) -> list[str]:
    turns = _unfinish(run)
    _corrupt_line(turns, 2)
    return ["view", str(run / "rollout_000")]


@damage("trace_of_garbage", r"trace\.jsonl")
def _(run: Path) -> list[str]:
    (run / "rollout_000" / "trace.jsonl").write_text("garbage\nmore garbage\n")
    return ["trace", str(run / "rollout_000")]


@damage("trace_corrupt_in_the_middle", r"trace\.jsonl:2\b")
def _(run: Path) -> list[str]:
    _corrupt_line(run / "rollout_000" / "trace.jsonl", 1, b"{not an envelope")
    return ["trace", str(run / "rollout_000")]


@damage("trace_unknown_actor", "nobody", "persona", "monitor")
def _(run: Path) -> list[str]:
    return ["trace", str(run / "rollout_000"), "--actor", "nobody"]


@damage("trace_unknown_type", "Nothing", "Speak")
def _(run: Path) -> list[str]:
    return ["trace", str(run / "rollout_000"), "--type", "Nothing"]


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_run_file_is_one_line_naming_it(case, run_copy):
    make, expected = DAMAGED[case]
    args = make(run_copy)
    assert_refused(loom(*args), *expected)
