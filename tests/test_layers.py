"""Layers only point down and the systems stand apart: the import contracts in pyproject.toml
hold (import-linter), checked the way a maintainer checks them, with ``scripts/check-layers``
(which lays the tree out as a wheel installs it: actors/ and machines/ live at the top level)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _check_layers():
    """scripts/check-layers as a module (it has no .py suffix: it is a command)."""
    from importlib.machinery import SourceFileLoader

    loader = SourceFileLoader("check_layers", str(ROOT / "scripts" / "check-layers"))
    spec = importlib.util.spec_from_loader("check_layers", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _installed_layout(where: Path) -> Path:
    """The package laid out in ``where`` as a wheel installs it, with the contracts beside it
    (what scripts/check-layers checks; tests/test_types.py type-checks the same copy)."""
    import shutil

    _check_layers().install_layout(where)
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    return where


def _contracts() -> int:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return len(settings["contracts"])


def test_the_import_contracts_hold():
    result = _check_layers().check()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"Contracts: {_contracts()} kept, 0 broken." in result.stdout


def _copy_of_tree(tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "tree"
    for name in ("loom_sim", "actors", "machines", "configs", "scripts"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_contract_catches_an_upward_import(tmp_path):
    """The check can fail: a model module that imports the runtime breaks the layers."""
    root = _copy_of_tree(tmp_path)
    (root / "loom_sim" / "models" / "upward.py").write_text(
        "import loom_sim.rollout.runtime.rollout  # a model reaching up\n"
    )
    result = _check_layers().check(root, tmp_path / "laid")
    assert result.returncode != 0
    assert "loom_sim.models.upward -> loom_sim.rollout.runtime.rollout" in result.stdout


def test_the_contract_catches_one_system_importing_another(tmp_path):
    """The systems are independent: a debate module reaching into the harness is refused."""
    root = _copy_of_tree(tmp_path)
    (root / "loom_sim" / "debate" / "sideways.py").write_text(
        "import loom_sim.harness.session  # one system reaching into another\n"
    )
    result = _check_layers().check(root, tmp_path / "laid")
    assert result.returncode != 0
    assert "loom_sim.debate.sideways -> loom_sim.harness.session" in result.stdout


def test_every_loom_sim_module_imported_exists_as_installed(tmp_path):
    """A development install also finds ``actors/rollout`` as ``loom_sim.actors.rollout``; a
    wheel installs it as ``loom_sim.rollout.actors`` only. An import by the first name passes
    every test but the wheel's (and import-linter and mypy skip a module they cannot find), so
    each ``loom_sim`` module imported anywhere must exist in the layout a wheel installs."""
    import ast

    layout = _installed_layout(tmp_path)
    modules = {
        ".".join(path.relative_to(layout).with_suffix("").parts).removesuffix(".__init__")
        for path in (layout / "loom_sim").rglob("*.py")
    }
    missing = []
    sources = [*layout.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] == "loom_sim" and name not in modules:
                    missing.append(f"{path.name}:{node.lineno} imports {name}")
    assert not missing, missing
