"""Loading a scenario pack: JSON or YAML, every problem located as ``file:line:col``.

A pack is read through the same located loader as every loom-sim config
(:func:`loom_sim.config.load_document`). JSON is YAML, with two differences handled here: a
JSON syntax error is reported with JSON's own words and position, and tabs — whitespace to
JSON, forbidden as indentation in YAML — are read as spaces (a valid JSON file has tabs only
between tokens, so positions stay where they were).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from loom_sim.config.errors import ConfigError, Issue
from loom_sim.config.loader import parse_document
from loom_sim.config.yaml_source import read_text
from loom_sim.harness.packs.spec import Pack, Scenario


@dataclass(frozen=True)
class LoadedPack:
    """A validated pack and where it came from (inputs are relative to its folder)."""

    pack: Pack
    path: Path
    name: str

    @property
    def base(self) -> Path:
        return self.path.parent

    def input_path(self, entry: str) -> Path:
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


def load_pack(path: str | Path) -> LoadedPack:
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                str(path), [Issue((), f"JSON syntax error: {exc.msg}", exc.lineno, exc.colno)]
            ) from None
        text = text.replace("\t", " ")
    pack = parse_document(text, str(path), Pack, "a scenario pack", {"base": path.parent})
    return LoadedPack(pack, path.resolve(), path.stem)
