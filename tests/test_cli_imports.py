"""``loom-sim --help`` and ``validate`` load nothing they do not use.

Timing them in a test would be flaky on a shared machine; the modules they import are not.
The heavy ones (a model runtime, an ML library) must never load for them, nor the layers that
only running or scoring need (trio, httpx, numpy). ``benchmarks/bench_cli_startup.py`` gives
the times.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from loom_sim.cli import COMMANDS, cli

ROOT = Path(__file__).parent.parent
HEAVY = ("torch", "sentence_transformers", "llama_cpp", "sklearn", "onnxruntime", "scipy")
RUNTIME = ("trio", "httpx", "httpcore", "numpy", "rich", "jinja2")

PROBE = """
import json, sys
from loom_sim.cli import main
sys.argv = ["loom-sim", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print("\\n" + json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def imported(*args: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after ``loom-sim ARGS`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("--version",),
        ("validate", str(ROOT / "configs" / "examples" / "mania_patient.yaml")),
        ("validate", str(ROOT / "configs" / "examples" / "student_persona.yaml")),
    ],
    ids=["help", "version", "validate-mania", "validate-student"],
)
def test_help_and_validate_load_no_model_runtime(args):
    loaded = imported(*args)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert not loaded & set(RUNTIME), sorted(loaded & set(RUNTIME))


def test_help_loads_no_command_and_no_pydantic():
    loaded = imported("--help")
    assert "pydantic" not in loaded and "yaml" not in loaded


def test_the_command_table_says_what_each_command_says_of_itself():
    for name, entry in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None, name
        stand_in = click.Command(name, help=entry.summary)
        assert stand_in.get_short_help_str(1000) == command.get_short_help_str(1000), name
