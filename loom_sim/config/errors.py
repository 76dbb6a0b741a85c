"""Config problems, located in the YAML the user wrote.

A config can be wrong in many places at once; users fix them faster when they see all of them,
each with ``file:line:column``, the dotted field path and one sentence saying what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_sim.errors import LoomError

Loc = tuple[str | int, ...]


def format_path(loc: Loc) -> str:
    """``("trajectory", "phases", 2, "name")`` -> ``trajectory.phases[2].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


@dataclass(frozen=True)
class Issue:
    """One problem in a config: where it is and what is wrong."""

    loc: Loc
    message: str
    line: int | None = None  # 1-based, None when the problem has no place in the text
    column: int | None = None

    @property
    def path(self) -> str:
        return format_path(self.loc)

    def render(self, source: str) -> str:
        where = source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.loc:
            return f"{where}: {self.path}: {self.message}"
        return f"{where}: {self.message}"


class ConfigError(LoomError):
    """A config that cannot be used, with every problem found in it."""

    def __init__(self, source: str, issues: list[Issue]):
        self.source = source
        self.issues = sorted(issues, key=lambda i: (i.line or 0, i.column or 0))
        super().__init__("\n".join(issue.render(source) for issue in self.issues))
