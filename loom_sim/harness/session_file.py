"""``session.json``: what one harness session was run from, and how it ended, as a typed record.

Written when the session starts (status ``running``; a resumed session adds its start to
``starts``) and again when it ends, with how it stopped. Fields a session gains when it ends
are ``UNSET`` until then, so the file says only what happened, as it always has. The report,
``loom-sim view`` and a resumed run read it through :data:`SESSION_FORMAT`.

Format version 1 is the only one written; the persona, scenario, policy and target settings are
the pack's own data, kept as the pack validated them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from loom_sim.core.records import RecordFormat
from loom_sim.errors import LoomError

FORMAT_VERSION = 1


class PackRef(msgspec.Struct, frozen=True):
    name: str
    path: str
    sha256: str


class TargetRef(msgspec.Struct, frozen=True):
    name: str
    settings: dict[str, Any]
    resolved: dict[str, Any]  # placeholders filled in: what was actually run


class SessionSeeds(msgspec.Struct, frozen=True):
    run: int
    session: int


class SessionRecord(msgspec.Struct, kw_only=True):
    """One session's ``session.json`` (fields in the order written)."""

    format_version: int = FORMAT_VERSION
    session: str
    index: int
    repeat: int
    pack: PackRef
    persona_id: str
    persona: dict[str, Any]
    scenario: dict[str, Any]
    policy: dict[str, Any]
    target: TargetRef
    models: dict[str, str]
    seeds: SessionSeeds
    versions: dict[str, str]
    inputs: list[str]
    starts: list[str]
    status: str  # running, then how it ended
    stop_reason: str | UnsetType | None = UNSET
    stop_detail: str | UnsetType | None = UNSET
    error: str | UnsetType | None = UNSET
    ended_at: str | UnsetType = UNSET
    elapsed_s: float | UnsetType = UNSET


SESSION_FORMAT: RecordFormat[SessionRecord] = RecordFormat(
    SessionRecord, noun="session file", version=FORMAT_VERSION
)


def read_session(path: Path) -> SessionRecord | None:
    """The session in ``path``, or None when there is none yet or it cannot be read (a reader
    that must go on: the resumed run starts its list of starts afresh, a viewer shows the
    turns)."""
    try:
        return SESSION_FORMAT.read(path)
    except LoomError:
        return None


def given(value: Any) -> Any:
    """``value``, or None when the session has not set it yet."""
    return None if value is UNSET else value
