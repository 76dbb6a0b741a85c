"""docs/workbench.md's example compare table is the real output of its own command.

A table written out by hand drifts: it had six scorer rows after the registry grew to twelve.
So the test runs the command the doc shows (scripted models only: deterministic, seconds),
compares the run with ``loom-sim compare`` and asserts the doc's table is the output's table,
row for row and number for number. A scorer registered, renamed or rescaled fails it until the
doc is updated with the new output.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.workbench_runs import invoke

DOC = Path(__file__).resolve().parent.parent / "docs" / "workbench.md"


def example_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split("### An example\n", 1)[1].split("\n## ", 1)[0]


def example_command(section: str) -> list[str]:
    """The ``loom-sim run …`` command of the example's shell block, as arguments."""
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "docs/workbench.md's example has no ```sh block"
    args = shlex.split(block.group(1).replace("\\\n", " "))
    assert args[:2] == ["loom-sim", "run"], args
    return args[1:]


def first_table(text: str) -> list[str]:
    """The lines of the first Markdown table in ``text``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scorer |"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line.rstrip())
    return table


@pytest.mark.slow
def test_workbench_example_table_is_compare_output(tmp_path):
    section = example_section()
    run_dir = tmp_path / "example"
    invoke(*example_command(section), "-o", str(run_dir))
    invoke("compare", str(run_dir), "-o", str(tmp_path / "compared"))
    report = (tmp_path / "compared" / "report.md").read_text(encoding="utf-8")
    real = first_table(report.split("## mania_patient.yaml\n", 1)[1])
    shown = first_table(section)
    assert [row.split("|")[1].strip() for row in shown] == [
        row.split("|")[1].strip() for row in real
    ], "docs/workbench.md's example table has other rows than compare's: paste the new table"
    assert shown == real, "docs/workbench.md's example table is stale: paste compare's table"
