"""Errors for people: every problem at file:line:column, and never a traceback."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.config.json_schema import json_schema

LOOM_SIM = Path(sys.executable).parent / "loom-sim"


# ─── helpers ────────────────────────────────────────────────────────────────


class Run:
    def __init__(self, code: int, stdout: str, stderr: str, exception: BaseException | None = None):
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.exception = exception

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def run_cli(*args: str) -> Run:
    result = CliRunner().invoke(cli, list(args), prog_name="loom-sim")
    exception = result.exception if not isinstance(result.exception, SystemExit) else None
    return Run(result.exit_code, result.stdout, result.stderr, exception)


def run_script(*args: str) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "LOOM_SIM_DEBUG"}
    proc = subprocess.run(
        [str(LOOM_SIM), *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def position(
    text: str, needle: str, *, after: str | None = None, offset: int = 0
) -> tuple[int, int]:
    """1-based (line, column) of ``needle`` (+ ``offset`` chars), searched after ``after``."""
    start = text.index(after) if after is not None else 0
    index = text.index(needle, start) + offset
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def replace_once(text: str, old: str, new: str, *, after: str | None = None) -> str:
    start = text.index(after) if after is not None else 0
    index = text.index(old, start)
    return text[:index] + new + text[index + len(old) :]


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stdout + run.stderr
    assert run.exception is None, f"exception escaped the CLI: {run.exception!r}"


# ─── the acceptance case ────────────────────────────────────────────────────


@pytest.fixture
def three_mistakes(mania_text: str, write_config) -> tuple[Path, dict[str, tuple[int, int]]]:
    """The reference config with a misspelled key, a phase out of order, a value above the ceiling.

    Returns the file and, per dotted field path, the (line, column) the error must point at.
    """
    text = replace_once(mania_text, "  speech_patterns:", "  speach_patterns:")
    text = replace_once(text, "value: 0.65}", "value: 0.30}", after="- name: escalation")
    text = replace_once(text, "end_value: 0.85", "end_value: 0.95", after="belief_intensity:")
    assert "0.9" in text.split("intensity_ceiling:")[1].splitlines()[0]  # the ceiling is 0.9

    expected = {
        # a mapping/list is shown at its key; a scalar where its value is written
        "persona.speach_patterns": position(text, "speach_patterns:"),
        "trajectory.phases[2].end_condition.value": position(
            text, "value: 0.30", after="- name: escalation", offset=len("value: ")
        ),
        "trajectory.dimensions.belief_intensity.end_value": position(
            text, "end_value: 0.95", after="belief_intensity:", offset=len("end_value: ")
        ),
    }
    return write_config(text, "mania_broken.yaml"), expected


def check_three_mistakes(run: Run, path: Path, expected: dict[str, tuple[int, int]]) -> None:
    assert run.code == 1
    assert_no_traceback(run)
    assert len(run.lines) == 3, run.stdout
    for dotted, (line, column) in expected.items():
        prefix = f"{path}:{line}:{column}: {dotted}: "
        matching = [out for out in run.lines if out.startswith(prefix)]
        assert len(matching) == 1, f"no line starts with {prefix!r}:\n{run.stdout}"
    messages = "\n".join(run.lines)
    assert "did you mean 'speech_patterns'" in messages
    assert "'escalation' ends at 0.3" in messages and "'disclosure' (0.35)" in messages
    assert "0.95 is above safety.intensity_ceiling (0.9)" in messages
    # problems are listed in file order
    lines = [int(out.split(":")[1]) for out in run.lines]
    assert lines == sorted(lines)
    assert "1 of 1 config(s) invalid (3 problems)" in run.stderr


def test_acceptance_three_mistakes_cli(three_mistakes) -> None:
    path, expected = three_mistakes
    check_three_mistakes(run_cli("validate", str(path)), path, expected)


def test_acceptance_three_mistakes_installed_script(three_mistakes) -> None:
    path, expected = three_mistakes
    run = run_script("validate", str(path))
    check_three_mistakes(run, path, expected)
    assert "\x1b[" not in run.stdout  # no colour codes when piped


def test_acceptance_three_mistakes_positions_are_real(three_mistakes) -> None:
    # The reported columns point at the very text that is wrong.
    path, expected = three_mistakes
    text_lines = path.read_text(encoding="utf-8").splitlines()
    shown = {
        dotted: text_lines[line - 1][column - 1 :] for dotted, (line, column) in expected.items()
    }
    assert shown["persona.speach_patterns"].startswith("speach_patterns:")
    assert shown["trajectory.phases[2].end_condition.value"].startswith("0.30}")
    assert shown["trajectory.dimensions.belief_intensity.end_value"] == "0.95"


# ─── bad inputs ─────────────────────────────────────────────────────────────

BAD_INDENT = 'schema_version: "0.1.0"\npersona:\n  identity:\n    name: Marcus\n   age: 28\n'


def _binary_junk() -> bytes:
    rng = random.Random(1234)
    junk = bytes(rng.randrange(256) for _ in range(512))
    return junk[:100] + b"\x00\x00" + junk[100:]


def _invalid_utf8() -> bytes:
    data = 'schema_version: "0.1.0"\npersona:\n  identity:\n    name: "Ren\xe9"\n'.encode("latin-1")
    assert b"\x00" not in data
    return data


# name -> (content, or None for "do not create"; "DIR" for a directory), words the line must hold
BAD_INPUTS: dict[str, tuple[object, tuple[str, ...]]] = {
    "syntax_error": (BAD_INDENT, ("YAML syntax error",)),
    "missing_file": (None, ("no such file",)),
    "empty_file": ("", ("empty",)),
    "whitespace_and_comments": ("\n   \n# only a comment\n  # another\n\n", ("empty",)),
    "directory": ("DIR", ("directory",)),
    "top_level_list": ("- schema_version: 0.1.0\n- persona: {}\n", ("top level", "a list")),
    "top_level_string": ("just some words\n", ("top level", "a plain string")),
    "binary_junk": (_binary_junk(), ("binary",)),
    "invalid_utf8": (_invalid_utf8(), ("not UTF-8", "offset")),
}


def make_bad_input(name: str, tmp_path: Path, mania_text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    if name == "duplicate_key":
        path.write_text(
            replace_once(mania_text, "    age: 28\n", "    age: 28\n    age: 29\n"),
            encoding="utf-8",
        )
        return path
    content, _ = BAD_INPUTS[name]
    if content is None:
        pass
    elif content == "DIR":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


ALL_BAD = [*BAD_INPUTS, "duplicate_key"]


def words_for(name: str) -> tuple[str, ...]:
    return (
        ("duplicate key 'age'", "first written at line")
        if name == "duplicate_key"
        else BAD_INPUTS[name][1]
    )


def check_bad_input(run: Run, path: Path, name: str) -> None:
    assert run.code == 1, (run.code, run.stdout, run.stderr)
    assert_no_traceback(run)
    assert len(run.lines) == 1, f"expected one line about {path}:\n{run.stdout}"
    line = run.lines[0]
    assert line.startswith(f"{path}:"), line
    for word in words_for(name):
        assert word.lower() in line.lower(), f"{word!r} not in {line!r}"
    assert run.stderr.strip() == "1 of 1 config(s) invalid (1 problem)"


@pytest.mark.parametrize("name", ALL_BAD)
def test_bad_input(name: str, tmp_path: Path, mania_text: str) -> None:
    path = make_bad_input(name, tmp_path, mania_text)
    check_bad_input(run_cli("validate", str(path)), path, name)


def test_bad_inputs_installed_script(tmp_path: Path, mania_text: str) -> None:
    # One process for all of them: each file gets exactly its one line.
    paths = {name: make_bad_input(name, tmp_path, mania_text) for name in ALL_BAD}
    run = run_script("validate", *map(str, paths.values()))
    assert run.code == 1
    assert_no_traceback(run)
    assert len(run.lines) == len(paths), run.stdout
    for name, path in paths.items():
        about = [line for line in run.lines if line.startswith(f"{path}:")]
        assert len(about) == 1, (name, run.stdout)
        for word in words_for(name):
            assert word.lower() in about[0].lower()
    assert (
        run.stderr.strip()
        == f"{len(paths)} of {len(paths)} config(s) invalid ({len(paths)} problems)"
    )


def test_tab_only_line_is_one_plain_line(write_config) -> None:
    # PyYAML (unlike YAML 1.2) rejects a blank line made of a tab; whatever the verdict, the
    # user gets one located line, not a traceback.
    path = write_config("# nothing here\n\t\n")
    run = run_cli("validate", str(path))
    assert run.code == 1
    assert_no_traceback(run)
    assert len(run.lines) == 1 and run.lines[0].startswith(f"{path}:")


def test_syntax_error_location(tmp_path: Path, mania_text: str) -> None:
    path = make_bad_input("syntax_error", tmp_path, mania_text)
    line, column = position(BAD_INDENT, "   age: 28", offset=3)  # where `age` starts
    run = run_cli("validate", str(path))
    assert run.lines[0].startswith(f"{path}:{line}:{column}: YAML syntax error: ")


def test_syntax_error_inside_reference_config(mania_text: str, write_config) -> None:
    text = replace_once(
        mania_text,
        "{type: pct, value: 0.35}",
        "{type: pct, value: 0.35",
        after="- name: disclosure",
    )
    path = write_config(text)
    run = run_cli("validate", str(path))
    assert run.code == 1
    assert_no_traceback(run)
    assert len(run.lines) == 1
    match = re.match(rf"{re.escape(str(path))}:(\d+):(\d+): YAML syntax error: ", run.lines[0])
    assert match, run.lines[0]
    # the flow mapping opened on the disclosure phase's end_condition line is not closed
    opened = position(text, "{type: pct, value: 0.35", after="- name: disclosure")[0]
    assert opened <= int(match.group(1)) <= opened + 2


def test_duplicate_key_location(tmp_path: Path, mania_text: str) -> None:
    path = make_bad_input("duplicate_key", tmp_path, mania_text)
    text = path.read_text(encoding="utf-8")
    first = position(text, "    age: 28")[0]
    line, column = position(text, "    age: 29", offset=4)
    run = run_cli("validate", str(path))
    assert run.lines[0].startswith(f"{path}:{line}:{column}: persona.identity.age: ")
    assert f"first written at line {first}" in run.lines[0]


def test_top_level_error_is_at_line_one(tmp_path: Path, mania_text: str) -> None:
    path = make_bad_input("top_level_list", tmp_path, mania_text)
    assert run_cli("validate", str(path)).lines[0].startswith(f"{path}:1:1: ")


def test_utf8_bom_is_accepted(mania_text: str, write_config) -> None:
    path = write_config(b"\xef\xbb\xbf" + mania_text.encode("utf-8"))
    run = run_cli("validate", str(path))
    assert run.code == 0, run.stdout
    assert len(run.lines) == 1
    assert run.lines[0].startswith(f"{path}: ok — Marcus Chen; ")


def test_validate_without_files_is_a_usage_error() -> None:
    run = run_cli("validate")
    assert run.code == 2
    assert "Missing argument" in run.stderr
    assert_no_traceback(run)


# ─── several files ──────────────────────────────────────────────────────────


def test_validate_several_valid_files(examples_dir: Path) -> None:
    files = sorted(examples_dir.glob("*.yaml"))
    run = run_cli("validate", *map(str, files))
    assert run.code == 0, run.stdout
    assert run.stderr == ""
    assert len(run.lines) == len(files)
    for path, line in zip(files, run.lines, strict=False):
        assert line.startswith(f"{path}: ok — ")


def test_validate_ok_line_summarises_config(examples_dir: Path) -> None:
    path = examples_dir / "mania_patient.yaml"
    run = run_cli("validate", str(path))
    assert run.lines == [
        f"{path}: ok — Marcus Chen; fixed_length, 50 turns; 5 phases; "
        "3 dimensions (belief_intensity, distress, action_proximity)"
    ]


def test_validate_mixed_files(
    examples_dir: Path, three_mistakes, tmp_path: Path, mania_text: str
) -> None:
    good = examples_dir / "mania_patient.yaml"
    broken, _ = three_mistakes
    missing = make_bad_input("missing_file", tmp_path, mania_text)
    run = run_cli("validate", str(good), str(broken), str(missing), str(good))
    assert run.code == 1
    assert_no_traceback(run)
    assert run.lines[0].startswith(f"{good}: ok")
    assert run.lines[-1].startswith(f"{good}: ok")
    assert sum(line.startswith(f"{broken}:") for line in run.lines) == 3
    assert [line for line in run.lines if line.startswith(f"{missing}:")] == [
        f"{missing}: no such file"
    ]
    assert len(run.lines) == 6
    assert run.stderr.strip() == "2 of 4 config(s) invalid (4 problems)"


# ─── internal errors ────────────────────────────────────────────────────────


def test_internal_error_is_one_line(monkeypatch, examples_dir: Path) -> None:
    def boom(path):
        raise RuntimeError("kaboom")

    monkeypatch.delenv("LOOM_SIM_DEBUG", raising=False)
    monkeypatch.setattr("loom_sim.cli.validate.load_config", boom)
    run = run_cli("validate", str(examples_dir / "mania_patient.yaml"))
    assert run.code != 0
    assert_no_traceback(run)
    output = (run.stdout + run.stderr).strip().splitlines()
    assert len(output) == 1, output
    assert "internal error" in output[0]
    assert "RuntimeError: kaboom" in output[0]
    assert "LOOM_SIM_DEBUG=1" in output[0]


def test_internal_error_with_debug_raises(monkeypatch, examples_dir: Path) -> None:
    def boom(path):
        raise RuntimeError("kaboom")

    monkeypatch.setenv("LOOM_SIM_DEBUG", "1")
    monkeypatch.setattr("loom_sim.cli.validate.load_config", boom)
    run = run_cli("validate", str(examples_dir / "mania_patient.yaml"))
    assert run.code != 0
    assert isinstance(run.exception, RuntimeError)


# ─── schema and version ─────────────────────────────────────────────────────


def test_schema_command_prints_json() -> None:
    run = run_cli("schema")
    assert run.code == 0
    schema = json.loads(run.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema == json.loads(json.dumps(json_schema()))
    assert "persona" in schema["properties"]


def test_schema_command_writes_file(tmp_path: Path) -> None:
    out = tmp_path / "loom.schema.json"
    run = run_cli("schema", "-o", str(out))
    assert run.code == 0
    assert run.stdout == ""
    assert f"wrote {out}" in run.stderr
    schema = json.loads(out.read_text(encoding="utf-8"))
    assert "$schema" in schema
    assert schema == json.loads(run_cli("schema").stdout)


def test_schema_command_to_unwritable_path(tmp_path: Path) -> None:
    run = run_cli("schema", "-o", str(tmp_path / "no" / "such" / "dir" / "s.json"))
    assert run.code != 0
    assert_no_traceback(run)


def test_version() -> None:
    run = run_cli("--version")
    assert run.code == 0
    expected = installed_version("loom-sim")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", expected)
    assert run.stdout.strip() == f"loom-sim, version {expected}"


def test_version_installed_script() -> None:
    run = run_script("--version")
    assert run.code == 0
    assert run.stdout.strip() == f"loom-sim, version {installed_version('loom-sim')}"
