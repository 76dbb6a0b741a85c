"""Keeping the files a pack or a deck names inside its folder.

A scenario pack or a debate deck is data someone else may have written: a pack's ``inputs``
are copied into the run's bundle, where the target and the simulated user read them, and a
deck's contract files reach a model's prompt. A path that is absolute, climbs out with
``..``, or leads through a symlink to somewhere else would carry any readable file there
(``/proc/self/environ``, with the API keys in it). So each path is resolved, symlinks
included, and must stay under the folder the file lives in; only an explicit choice of the
user (``--allow-outside-paths``) lifts that.
"""

from __future__ import annotations

from pathlib import Path

#: The command-line flag that lets a pack or deck name files outside its folder.
ALLOW_FLAG = "--allow-outside-paths"


def outside(base: Path, entry: str | Path) -> Path | None:
    """Where ``entry`` (relative to ``base``) really leads, if that is outside ``base``;
    None when it stays inside. Symlinks are followed, whether or not the file exists yet."""
    root = Path(base).resolve()
    target = (root / entry).resolve()
    return None if target == root or target.is_relative_to(root) else target


def refusal(entry: str | Path, target: Path, folder: str) -> str:
    """The one sentence that refuses a path leading outside ``folder`` (the loader adds
    where the field is)."""
    return (
        f"{str(entry)!r} leads outside the {folder} (to {target}); keep the file inside it, "
        f"or pass {ALLOW_FLAG} to allow it"
    )
