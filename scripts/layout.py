"""Where each package of loom-sim lives in the repository: the one source of the package list.

The repository keeps ``actors/``, ``machines/`` and ``configs/`` at its top level for people
reading it, and installs them under ``loom_sim``: ``actors/`` as ``loom_sim.actors``, and a
system's folder inside it (``actors/debate/``) as that system's subpackage
(``loom_sim.debate.actors``); ``machines/`` the same way. Everything else is a folder of
``loom_sim/`` with an ``__init__.py``. ``setup.py`` hands this list to setuptools, and
``scripts/check-layers`` lays the tree out the same way to check the import contracts, so a new
package is found by being created — there is no list to keep by hand.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPED = {
    "actors": "loom_sim.actors",
    "machines": "loom_sim.machines",
    "configs": "loom_sim.configs",
}
BY_SYSTEM = ("actors", "machines")  # folders whose subfolders belong to a system
SKIP = {"__pycache__", "templates", "static"}


def _packages_under(base: Path) -> list[Path]:
    return sorted(
        init.parent
        for init in base.rglob("__init__.py")
        if not SKIP & set(init.parent.relative_to(base).parts)
    )


def packages(root: Path = ROOT) -> dict[str, str]:
    """Every package of the distribution -> its folder, relative to ``root`` (posix)."""
    found: dict[str, str] = {}
    for folder in _packages_under(root / "loom_sim"):
        found[".".join(folder.relative_to(root).parts)] = folder.relative_to(root).as_posix()
    for top, name in MAPPED.items():
        base = root / top
        for folder in _packages_under(base):
            parts = folder.relative_to(base).parts
            if parts and top in BY_SYSTEM and (root / "loom_sim" / parts[0]).is_dir():
                package = ".".join(("loom_sim", parts[0], top, *parts[1:]))
            else:
                package = ".".join((name, *parts))
            found[package] = folder.relative_to(root).as_posix()
    return found


def install_layout(where: Path, root: Path = ROOT) -> Path:
    """Lay the Python files out in ``where`` as a wheel installs them (``where/loom_sim/...``)."""
    for package, folder in packages(root).items():
        target = where.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in (root / folder).glob("*.py"):
            shutil.copy2(source, target / source.name)
    return where
