"""What loom-sim ships beside its code: example persona configs, adversary configs, probe sets
and scripts, installed as package data (``configs/`` in the repository is the package
``loom_sim.configs``), so a wheel installed anywhere has them.

A command that takes a config accepts a path, or the name of a shipped one
(``loom-sim probe moral_dilemmas``, ``loom-sim run mania_patient``,
``loom-sim harness run studio_benchmarks``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from loom_sim.errors import LoomError

#: The folders of shipped configs, by what they hold.
KINDS = {
    "examples": "persona config",
    "ported": "persona config",
    "adversaries": "adversary config",
    "probes": "probe config",
    "scripted": "script",
    "packs": "scenario pack",
    "decks": "deck",
}
SUFFIXES = (".yaml", ".json")


def shipped_dir(kind: str) -> Path:
    """The installed folder of shipped ``kind`` files (wheels install as plain files)."""
    return Path(str(resources.files("loom_sim.configs") / kind))


def shipped_names(kind: str) -> list[str]:
    folder = shipped_dir(kind)
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.iterdir() if p.suffix in SUFFIXES and p.is_file())


def find(name_or_path: str | Path, *kinds: str) -> Path:
    """``name_or_path`` if it is a file (or looks like a path), else the shipped file of that
    name in the first of ``kinds`` that has one."""
    path = Path(name_or_path)
    if path.exists() or path.suffix or len(path.parts) > 1:
        return path  # the loaders report a missing or unreadable file in their own words
    for kind in kinds:
        for suffix in SUFFIXES:
            candidate = shipped_dir(kind) / f"{path.name}{suffix}"
            if candidate.is_file():
                return candidate
    what = KINDS.get(kinds[0], "config") if kinds else "config"
    known = ", ".join(n for kind in kinds for n in shipped_names(kind)) or "none"
    raise LoomError(f"{name_or_path}: no such file, and no shipped {what} of that name ({known})")
