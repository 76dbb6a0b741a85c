"""One command-line convention across commands: every ``--help`` ends with an example, the
machine-readable form is ``--json`` everywhere (the older ``--format json|jsonl`` still works
and says the new spelling), and tables on a pipe are not cut to a terminal's width."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from workbench_runs import make_single

from loom_sim.cli import COMMANDS, cli
from loom_sim.cli.examples import EXAMPLES, PASSED_ON


def _walk() -> list[tuple[str, click.Command]]:
    """Every command and sub-command, by its path under ``loom-sim``, from the command table."""
    found: list[tuple[str, click.Command]] = []
    context = click.Context(cli)

    def visit(path: str, command: click.Command) -> None:
        found.append((path, command))
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None, f"{path} {name}"
                visit(f"{path} {name}", sub)

    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert command is not None, name
        visit(name, command)
    return found


COMMAND_PATHS = [path for path, _ in _walk()]


@pytest.mark.parametrize("path", COMMAND_PATHS)
def test_every_help_ends_with_an_example(path):
    if path in PASSED_ON:  # its own program's help, read as a user reads it
        run = [sys.executable, "-m", "loom_sim", *path.split(), "--help"]
        output = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    else:
        result = CliRunner().invoke(cli, [*path.split(), "--help"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        output = result.output
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    assert lines[-2] == "Example:", f"loom-sim {path} --help does not end with an example"
    assert lines[-1].startswith(f"loom-sim {path}"), lines[-1]
    assert lines[-1] == EXAMPLES[path]


def test_every_command_has_an_example_in_the_table():
    assert set(COMMAND_PATHS) <= set(EXAMPLES)


def test_every_example_names_a_command_that_exists():
    assert set(EXAMPLES) <= set(COMMAND_PATHS)


def test_machine_readable_output_is_spelled_json_everywhere():
    """No visible option offers json under another name; every command with a machine form
    has ``--json``."""
    with_json = set()
    for path, command in _walk():
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            if "--json" in param.opts:
                with_json.add(path)
            shown = param.make_metavar(click.Context(command)) if param.type else ""
            assert "json" not in shown, f"loom-sim {path} offers {param.opts[0]} {shown}"
    assert {"dry-run", "signals", "export", "compare", "runs", "trace"} <= with_json


def test_the_old_format_spelling_still_works_and_names_the_new_one():
    runner = CliRunner()
    new = runner.invoke(cli, ["dry-run", "mania_patient", "--turns", "2", "--json"])
    old = runner.invoke(cli, ["dry-run", "mania_patient", "--turns", "2", "--format", "json"])
    assert new.exit_code == old.exit_code == 0, old.output
    assert old.stdout == new.stdout
    assert [json.loads(line)["turn"] for line in new.stdout.splitlines()] == [0, 1]
    assert "note: --format json is now --json" in old.stderr
    assert "--format" not in new.stderr


@pytest.mark.slow
def test_piped_runs_table_is_not_cut(tmp_path):
    """A real ``loom-sim runs`` with its stdout a pipe (and no COLUMNS): every row whole."""
    root = tmp_path / "results"
    root.mkdir()
    name = "a-run-whose-name-is-far-wider-than-eighty-columns-" + "x" * 60
    make_single(tmp_path, "scripted/varied", "work")
    (tmp_path / "work").rename(root / name)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "loom-sim"), "runs", str(root)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert name in done.stdout, done.stdout
    row = next(line for line in done.stdout.splitlines() if name in line)
    assert "scripted/varied" in row and "complete" in row


def test_piped_table_console_is_not_the_terminal_width(monkeypatch):
    from loom_sim.cli.console import PIPED_WIDTH, table_console

    monkeypatch.delenv("COLUMNS", raising=False)
    with Path(os.devnull).open("w") as piped:
        assert table_console(file=piped).width == PIPED_WIDTH
        monkeypatch.setenv("COLUMNS", "100")  # a width asked for is kept
        assert table_console(file=piped).width == 100


def test_view_turns_help_and_behaviour_agree():
    """``--turns 1:2`` is turns 1 and 2 as numbered on screen, and the help says so."""
    from loom_sim.cli.view import parse_turns

    assert list(range(10))[parse_turns("1:2")] == [0, 1]
    assert list(range(10))[parse_turns("-5:")] == [5, 6, 7, 8, 9]
    help_text = " ".join(CliRunner().invoke(cli, ["view", "--help"]).output.split())
    assert "both included" in help_text and "exclusive" not in help_text


@pytest.mark.parametrize("command", ["compare", "export", "view", "score", "runs", "report"])
def test_a_missing_path_is_one_usage_error_everywhere(command, tmp_path):
    """The same rule for every command that reads a path: click's usage error, exit 2."""
    missing = tmp_path / "nowhere"
    result = CliRunner().invoke(cli, [command, str(missing)])
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.stderr and "Traceback" not in result.output
