"""Loading a scenario pack: JSON or YAML, every problem located as ``file:line:col``.

A pack is read through the same located, bounded and strictly typed loader as every loom-sim
config (:func:`loom_sim.config.loader.load_document`, which reads JSON too). The files a pack
names must stay inside its folder unless the user allows otherwise (``allow_outside``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loom_sim.config.errors import ConfigError, Issue
from loom_sim.config.loader import load_document
from loom_sim.core.paths import outside, refusal
from loom_sim.harness.packs.spec import Pack, Scenario


@dataclass(frozen=True)
class LoadedPack:
    """A validated pack and where it came from (inputs are relative to its folder)."""

    pack: Pack
    path: Path
    name: str
    allow_outside: bool = False

    @property
    def base(self) -> Path:
        return self.path.parent

    def input_path(self, entry: str) -> Path:
        """Where an input really is; checked again as it is used (a symlink may have been
        swapped since the pack was loaded)."""
        escaped = None if self.allow_outside else outside(self.base, entry)
        if escaped is not None:
            raise ConfigError(str(self.path), [Issue((), refusal(entry, escaped, "pack's folder"))])
        return (self.base / entry).resolve()

    def scenarios(self, ids: tuple[str, ...] | list[str] = ()) -> list[Scenario]:
        """The scenarios named by ``ids`` (all, if none), in the pack's order."""
        known = [s.id for s in self.pack.scenarios]
        unknown = [i for i in ids if i not in known]
        if unknown:
            listed = ", ".join(map(repr, unknown))
            message = f"no scenario named {listed}; scenarios: {', '.join(known)}"
            raise ConfigError(str(self.path), [Issue((), message)])
        return [s for s in self.pack.scenarios if not ids or s.id in ids]


def load_pack(path: str | Path, *, allow_outside: bool = False) -> LoadedPack:
    """A pack file, validated; ``allow_outside`` lets its inputs and event files lie outside
    its folder (``--allow-outside-paths``)."""
    path = Path(path)
    context = {"base": path.parent, "allow_outside": allow_outside}
    pack = load_document(path, Pack, "a scenario pack", context)
    return LoadedPack(pack, path.resolve(), path.stem, allow_outside)
