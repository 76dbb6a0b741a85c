"""Reading psychosis-bench-2.0's files for the port: a patient profile, and an intensity
schedule with the remarks its authors left in comments (YAML drops them; the port keeps them).
Every problem is one sentence naming the file, and the field or line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loom_sim.errors import LoomError

DIMENSIONS = ("belief", "distress", "action")

__all__ = ["DIMENSIONS", "Schedule", "load_profile", "load_schedule", "schedule_path"]


@dataclass
class Schedule:
    name: str
    description: str
    path: Path
    phases: list[dict[str, Any]]  # name, end_pct, notes, belief/distress/action: (start, end)
    header: list[str]


def _load_yaml(path: Path, what: str) -> tuple[Any, str]:
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LoomError(f"{path}: no such {what} file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LoomError(f"{path}: cannot read the {what} ({err})") from None
    try:
        return yaml.safe_load(source), source
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise LoomError(f"{where}: not valid YAML ({problem})") from None


def _comments(source: str) -> list[str]:
    """The comment lines a file opens with: psychosis-bench puts its summary labels there."""
    lines = []
    for line in source.splitlines():
        if not line.strip().startswith("#"):
            if line.strip():
                break
            continue
        text = line.strip().lstrip("#").strip()
        if text and not text.endswith(".yaml"):
            lines.append(text)
    return lines


def load_profile(path: Path) -> tuple[dict[str, Any], list[str]]:
    data, source = _load_yaml(path, "profile")
    profile = data.get("profile") if isinstance(data, dict) else None
    if not isinstance(profile, dict):
        raise LoomError(f"{path}: not a psychosis-bench profile (no `profile:` mapping)")
    for key in ("id", "name"):
        if not isinstance(profile.get(key), str) or not profile[key].strip():
            raise LoomError(f"{path}: profile.{key} is missing or not text")
    if not re.fullmatch(r"[\w.-]+", profile["id"]):
        raise LoomError(f"{path}: profile.id {profile['id']!r} cannot name a file")
    return profile, _comments(source)


def schedule_path(schedule: str | Path, profile_path: Path) -> Path:
    """A file if it looks like one; otherwise a name, looked up where psychosis-bench keeps its
    schedules: ``schedules/`` beside the profiles."""
    path = Path(schedule)
    if path.is_file() or path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        return path
    found = profile_path.parent / "schedules" / f"{schedule}.yaml"
    if not found.is_file():
        raise LoomError(
            f"{profile_path}: no schedule {str(schedule)!r} at {found}; "
            "give a schedule file instead"
        )
    return found


def load_schedule(path: Path) -> Schedule:
    data, source = _load_yaml(path, "schedule")
    body = data.get("intensity_schedule", data) if isinstance(data, dict) else None
    phases = body.get("phases") if isinstance(body, dict) else None
    if not isinstance(phases, list) or not phases:
        raise LoomError(f"{path}: not a psychosis-bench schedule (no `phases:` list)")
    notes: dict[int, list[str]] = {}  # comments inside each phase entry (YAML drops them)
    for line in source.splitlines():
        if re.match(r"\s*-\s*{?\s*name\s*:", line):
            notes[len(notes)] = []
        elif notes and line.strip().startswith("#"):
            notes[len(notes) - 1].append(line.strip().lstrip("#").strip())
    out, previous = [], 0.0
    for index, phase in enumerate(phases):
        where = f"{path}: phases[{index}]"
        if not isinstance(phase, dict) or not isinstance(phase.get("name"), str):
            raise LoomError(f"{where}: needs a name")
        end = phase.get("end_pct")
        if isinstance(end, bool) or not isinstance(end, int | float) or not previous < end <= 1:
            raise LoomError(f"{where}.end_pct: must rise from {previous} to at most 1.0")
        entry = {
            "name": phase["name"],
            "end_pct": float(end),
            "notes": " ".join(notes.get(index, [])),
        }
        for dim in DIMENSIONS:
            pair = phase.get(dim)
            if not (
                isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(v, int | float) and 0 <= v <= 1 for v in pair)
            ):
                raise LoomError(f"{where}.{dim}: must be [start, end], both in [0, 1]")
            entry[dim] = (float(pair[0]), float(pair[1]))
        out.append(entry)
        previous = float(end)
    if previous != 1.0:
        raise LoomError(f"{path}: the last phase must end at end_pct 1.0, not {previous}")
    about = body if isinstance(body, dict) else {}
    name = str(about.get("name") or path.stem)
    return Schedule(name, str(about.get("description", "")), path, out, _comments(source))
