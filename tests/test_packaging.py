"""Every package of the source tree is listed for the wheel.

``tool.setuptools.packages`` is an explicit list, and a package left out of it is missing only
from a wheel built on a clean checkout: a warm checkout's stale ``build/`` still has it, so the
wheel tests pass there. This check reads the tree itself."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_in_the_tree_is_listed_for_the_wheel():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(settings["packages"])
    found = set()
    for name, folder in settings["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in parts and "templates" not in parts:
                found.add(".".join((name, *parts)))
    assert found - listed == set(), "add these to tool.setuptools.packages in pyproject.toml"
