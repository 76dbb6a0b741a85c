"""What a rollout leaves on disk, as typed records.

``turns.jsonl`` gets one :class:`TurnRecord` per completed turn, appended and flushed the moment
the turn is complete, so a killed run keeps every turn it finished and ``--resume`` rebuilds
the rollout from them. ``transcript.json`` (a :class:`Transcript`) is written when the rollout
ends, done or in error.
"""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.messages import MonitorEvent
from loom_sim.models.base import Usage


class RejectedDraft(msgspec.Struct, frozen=True):
    attempt: int
    text: str
    events: list[MonitorEvent]


class TurnRecord(msgspec.Struct, frozen=True):
    turn: int
    phase: str
    phase_index: int
    progress: float
    intensities: dict[str, float]
    levels: dict[str, str | None]
    injection: str  # full | reminder | none
    persona: str
    interlocutor: str
    reminder: str | None = None
    emergency: str | None = None
    revelations: list[str] = msgspec.field(default_factory=list)  # "topic:variant" offered
    persona_attempts: int = 1
    rejected: list[RejectedDraft] = msgspec.field(default_factory=list)
    monitor_events: list[MonitorEvent] = msgspec.field(default_factory=list)
    usage: dict[str, Usage] = msgspec.field(default_factory=dict)  # by role
    timings: dict[str, float] = msgspec.field(default_factory=dict)  # seconds, by step
    cut_turns: dict[str, int] = msgspec.field(default_factory=dict)  # by role
    fired: dict[str, int] = msgspec.field(default_factory=dict)  # trigger phases -> turn
    pending_emergency: str | None = None  # scheduled for the next turn
    failed_attempts: int = 0  # unusable replies before this turn succeeded
    started_at: float = 0.0
    ended_at: float = 0.0
    next_envelope_id: int = 1


class Transcript(msgspec.Struct):
    rollout: str
    index: int
    seed: int
    status: str  # done | error
    stop_reason: str | None
    stop_detail: str | None
    error: str | None
    persona: str
    config: str
    models: dict[str, str]
    template_version: str
    opener: str
    opening: str | None
    turns: list[TurnRecord]
    usage: dict[str, Usage]
    cost_usd: float | None
    started_at: float
    ended_at: float
    duration_s: float
    scores: dict[str, Any] = msgspec.field(default_factory=dict)


TURN_ENCODER = msgspec.json.Encoder()
TURN_DECODER = msgspec.json.Decoder(TurnRecord)
TRANSCRIPT_DECODER = msgspec.json.Decoder(Transcript)
