"""Layers only point down: the import contracts in pyproject.toml hold (import-linter).

import-linter builds its graph by walking the package's folder, but ``loom_sim.actors``,
``loom_sim.machines`` and ``loom_sim.configs`` live at the repository's top level (mapped by
setuptools' ``package-dir``). So the test lays the package out as it is installed — a copy in
a temporary folder — and runs ``lint-imports`` on that copy with the repository's contracts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPED = {"actors": "actors", "machines": "machines", "configs": "configs"}


def _installed_layout(where: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    package = where / "loom_sim"
    shutil.copytree(ROOT / "loom_sim", package, ignore=ignore)
    for name, folder in MAPPED.items():
        shutil.copytree(ROOT / folder, package / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    return where


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    # import-linter's console script, run by this interpreter (whatever venv the tests use)
    run = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"
    return subprocess.run(
        [sys.executable, "-c", run, "--config", "pyproject.toml", "--no-cache"],
        cwd=where,
        env={**os.environ, "PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_import_contracts_hold(tmp_path):
    result = lint_imports(_installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_the_contract_catches_an_upward_import(tmp_path):
    """The check can fail: a model module that imports the runtime breaks the layers."""
    where = _installed_layout(tmp_path)
    upward = where / "loom_sim" / "models" / "upward.py"
    upward.write_text("import loom_sim.runtime.rollout  # a model reaching up\n")
    result = lint_imports(where)
    assert result.returncode != 0
    assert "loom_sim.models.upward -> loom_sim.runtime.rollout" in result.stdout
