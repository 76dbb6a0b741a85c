"""Which files the viewer may read: only those under its results folder.

Every path in a URL is relative to the results folder and goes through :class:`Resolver`
before anything touches the disk. The candidate is resolved (following every symlink) and
must still lie inside the resolved folder, so ``..``, an absolute path, an encoded slash or a
symlink pointing elsewhere all end in the same "not found" — which also says nothing about
what exists outside. The same holds one level in: a run whose ``run.json``, rollout folder or
rollout file is a link leading outside is not found either, so nothing is read through it.
"""

from __future__ import annotations

from pathlib import Path

from loom_sim.runs.load import LeadsOutside, check_confined
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.run_file import RUN_FILE

__all__ = ["NotFound", "Resolver"]


class NotFound(Exception):
    """Nothing the viewer may show is at this path (outside the folder, or not a run)."""


class Resolver:
    def __init__(self, root: Path):
        self.root = root.resolve()

    def inside(self, rel: str) -> Path:
        """``rel`` as a path inside the root, or NotFound."""
        if "\x00" in rel or "\\" in rel:
            raise NotFound(rel)
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise NotFound(rel)
        candidate = self.root.joinpath(*parts).resolve() if parts else self.root
        if candidate != self.root and not candidate.is_relative_to(self.root):
            raise NotFound(rel)
        return candidate

    def run_dir(self, rel: str) -> Path:
        path = self.inside(rel)
        if path == self.root or not (path / RUN_FILE).is_file():
            raise NotFound(rel)
        self._confined(path, rel)
        return path

    def rollout_dir(self, rel: str) -> Path:
        path = self.inside(rel)
        if not ((path / TRANSCRIPT_FILE).is_file() or (path / TURNS_FILE).is_file()):
            raise NotFound(rel)
        if path.parent == self.root or not (path.parent / RUN_FILE).is_file():
            raise NotFound(rel)
        self._confined(path.parent, rel)
        return path

    def _confined(self, run_dir: Path, rel: str) -> None:
        try:
            check_confined(run_dir, self.root)
        except LeadsOutside:
            raise NotFound(rel) from None

    def rel(self, path: Path) -> str:
        """The URL path of a file under the root (not URL-encoded: templates encode it)."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError, RuntimeError):
            raise NotFound(path.name) from None
