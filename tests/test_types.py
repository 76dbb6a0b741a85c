"""The package type-checks: mypy over loom_sim as installed (actors/ and machines/ included),
with the settings in pyproject.toml (strict for the modules listed there).

mypy, not pyright: it installs from PyPI as a pure-Python wheel and runs offline, where the
pyright package fetches a Node.js runtime on first use; and pydantic's mypy plugin types the
config models' constructors as they really are. The package is checked in its installed layout
(the same copy tests/test_layers.py makes), because actors/, machines/ and configs/ are mapped
into loom_sim by setuptools and a checker given the folders would see other module names.
The cache lives in the repository's .mypy_cache, so a second run takes seconds.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from tests.test_layers import ROOT, _installed_layout


@pytest.mark.slow
def test_loom_sim_type_checks(tmp_path: Path) -> None:
    where = _installed_layout(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "-p", "loom_sim", "--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=where,
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


#: Imported directly but installed by the dependency that exposes them, at the version it
#: pins: pydantic pins pydantic-core exactly, jinja2 needs markupsafe for its escaping, and the
#: embedding backend reaches torch and transformers only through sentence-transformers.
COMES_WITH = {
    "pydantic-core": "pydantic",
    "markupsafe": "jinja2",
    "torch": "sentence-transformers",
    "transformers": "sentence-transformers",
    "anyio": "starlette",  # starlette runs on anyio; the live page waits with its primitives
}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_third_party_import_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(d) for d in project["dependencies"]}
    # an optional extra's packages (ray) are declared too: the code importing them says how
    # to install the extra when they are missing
    for extra, requirements in project["optional-dependencies"].items():
        if extra != "dev":
            declared |= {_name(d) for d in requirements}
    by_module = packages_distributions()
    missing = {}
    for folder in ("loom_sim", "actors", "machines"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {n.split(".")[0] for n in names}:
                    if top in sys.stdlib_module_names or top == "loom_sim":
                        continue
                    dists = {d.lower().replace("_", "-") for d in by_module.get(top, [top])}
                    if not dists & (declared | {k for k, v in COMES_WITH.items() if v in declared}):
                        missing.setdefault(top, path.relative_to(ROOT).as_posix())
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
