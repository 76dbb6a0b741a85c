"""``probe.json``: what a probe ran and with what, as one typed record.

Planning writes it; each mode's entry is rewritten as the mode starts and ends; the summary
and a later ``probe -o`` into the same directory read it. Fields a mode gains as it runs
(``started_at``, ``bandit_state``, ``completed``, ``ended_at``, ``error``) are ``UNSET`` until
then, so the file says only what happened, as it always has.

Format version 1 is the only one written. Files written before every record carried the plan
header have no ``header``: reading one builds it from the file's own fields (its seed, its
first mode's redacted command line, its creation time, versions and rubric), so every reader
finds a header.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from loom_sim.core.header import PlanHeader
from loom_sim.core.records import RecordFormat

PROBE_FILE = "probe.json"
FORMAT = "loom-sim.probe"
FORMAT_VERSION = 1


class RubricRecord(msgspec.Struct, frozen=True):
    id: str
    version: str
    digest: str


class BanditStateRecord(msgspec.Struct):
    """The bandit's state file and its counts before and after the mode ran."""

    path: str
    counts_before: Any = None
    counts_after: Any | UnsetType = UNSET


class ModeRecord(msgspec.Struct, kw_only=True):
    """One mode's entry: how it was invoked, then how far it got."""

    runs: int
    status: str  # planned, running, done, stopped
    argv: list[str]  # redacted
    base_url: str | None  # redacted
    timeout_s: float
    concurrency: int
    started_at: str | UnsetType = UNSET
    bandit_state: BanditStateRecord | UnsetType = UNSET
    completed: int | UnsetType = UNSET
    ended_at: str | UnsetType = UNSET
    error: str | UnsetType | None = UNSET


class ProbeFileRecord(msgspec.Struct, kw_only=True):
    """One probe directory, as ``probe.json`` holds it (fields in the order written)."""

    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    loom_sim_version: str
    created_at: str
    config_path: str
    config_name: str
    config_sha256: str
    seed: int
    models: dict[str, str]  # "target", "judge" -> spec
    target_system_prompt: str | None
    rubric: RubricRecord
    true_rates: dict[str, dict[str, float]] | None
    versions: dict[str, str]
    config: dict[str, Any]
    modes: dict[str, ModeRecord] = msgspec.field(default_factory=dict)
    header: PlanHeader

    def data(self) -> dict[str, Any]:
        """The record as JSON data (what ``probe.json`` holds)."""
        return msgspec.to_builtins(self)


def _with_header(data: dict[str, Any]) -> dict[str, Any]:
    """A file from before the plan header: its header, built from what the file says."""
    if data.get("format") != FORMAT:
        return data  # refused as not a probe file when decoded
    if data.get("header") is None:
        modes = data.get("modes")
        first = next(iter(modes.values()), None) if isinstance(modes, dict) else None
        argv = first.get("argv") if isinstance(first, dict) else None
        rubric = data.get("rubric")
        rubric = rubric if isinstance(rubric, dict) else {}
        data["header"] = {
            "format_version": FORMAT_VERSION,
            "seed": data.get("seed"),
            "command": argv if isinstance(argv, list) else [],  # redacted when written
            "created_at": data.get("created_at") or "",
            "versions": data.get("versions") or {},
            "rubric_versions": {rubric["id"]: rubric["version"]}
            if {"id", "version"} <= set(rubric)
            else {},
        }
    return data


PROBE_FORMAT: RecordFormat[ProbeFileRecord] = RecordFormat(
    ProbeFileRecord, noun="probe file", version=FORMAT_VERSION, shape=_with_header
)
