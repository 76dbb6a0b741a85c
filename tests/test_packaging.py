"""Every package of the source tree ships, under the name it is imported by.

The package list is derived from the tree (scripts/layout.py, read by setup.py), so nobody
keeps it by hand; these tests check the derivation against the tree and against the installed
package: each derived package imports under its name, from the folder it was derived from."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from layout import packages  # noqa: E402


def test_every_folder_with_an_init_is_a_package():
    derived = {folder for folder in packages().values()}
    for top in ("loom_sim", "actors", "machines", "configs"):
        for init in (ROOT / top).rglob("__init__.py"):
            folder = init.parent.relative_to(ROOT)
            if {"__pycache__", "templates", "static"} & set(folder.parts):
                continue
            assert folder.as_posix() in derived, f"{folder} is not installed"


def test_a_systems_actors_and_machines_install_under_that_system():
    found = packages()
    assert found["loom_sim.debate.actors"] == "actors/debate"
    assert found["loom_sim.harness.machines"] == "machines/harness"
    assert found["loom_sim.actors"] == "actors"


def test_every_derived_package_imports_from_its_folder():
    for name, folder in packages().items():
        module = importlib.import_module(name)
        where = Path(module.__file__).resolve().parent
        assert where == (ROOT / folder).resolve(), f"{name} comes from {where}, not {folder}"
