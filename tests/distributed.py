"""Helpers for the executor and shard tests: a run directory's whole contents, with what is
allowed to differ between two runs of the same plan (when and where they ran) taken out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from loom_sim.cli import cli

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "configs" / "examples"
MANIA = EXAMPLES / "mania_patient.yaml"
DEPRESSED = EXAMPLES / "depressed_patient.yaml"
MODELS = ["--persona-model", "scripted/varied", "--judge-model", "scripted/judge"]
TARGETS = ["--target", "scripted/varied", "--target", "scripted/paraphrase"]
# A matrix of 2 configs x 2 scripted targets x 2 rollouts (8 cells), 2 turns each.
MATRIX = [str(MANIA), str(DEPRESSED), *TARGETS, *MODELS, "--rollouts", "2", "--turns", "2"]

# Times, and the records of how a run was started and executed.
VOLATILE = frozenset(
    {
        "ts",
        "started_at",
        "ended_at",
        "duration_s",
        "timings",
        "created_at",
        "argv",
        "executions",
        "versions",
        "concurrency",
        "next_envelope_id",  # envelope ids number on across a resume: unique in the trace
    }
)
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?")


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def contents(run_dir: Path) -> dict[str, Any]:
    """Every file of a run, by its path in the run: JSON as data, JSON lines as lists, text
    with its timestamps blanked; times and execution records left out."""
    found: dict[str, Any] = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        name = str(path.relative_to(run_dir))
        if path.suffix == ".json":
            found[name] = _strip(json.loads(path.read_text()))
        elif path.suffix == ".jsonl":
            found[name] = [_strip(json.loads(line)) for line in path.read_text().splitlines()]
        else:
            found[name] = _ISO.sub("<time>", path.read_text(errors="replace"))
    return found


def assert_same_run(ours: Path, theirs: Path) -> None:
    a, b = contents(ours), contents(theirs)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], f"{name} differs"
