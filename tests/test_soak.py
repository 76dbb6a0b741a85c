"""The soak's CI part (benchmarks/soak.py --subset ci), run as a user runs it: two rollouts of
an example on the embedded model, then scored and reported (they crashed in scoring when the
persona's kept prompt states outgrew their budget: ``KeyError`` on thousands of token ids),
and a matrix of two embedded targets. Every job must end with its report, every turn on disk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parent.parent / "benchmarks" / "soak.py"


@pytest.mark.slow
def test_multi_rollout_and_matrix_embedded_runs_end_with_their_reports():
    done = subprocess.run(
        [sys.executable, str(SOAK), "--subset", "ci", "--timeout", "1500"],
        capture_output=True, text=True, check=False, timeout=3000,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert sum(line.strip().startswith("ok") for line in lines[:-1]) == 2, done.stdout
    assert "internal errors 0, hangs 0, lost turns 0" in lines[-1]
