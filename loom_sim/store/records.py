"""What a rollout leaves on disk, as typed records.

``turns.jsonl`` gets one :class:`TurnRecord` per completed turn, appended and flushed the moment
the turn is complete, so a killed run keeps every turn it finished and ``--resume`` rebuilds
the rollout from them. ``transcript.json`` (a :class:`Transcript`) is written when the rollout
ends, done or in error.
"""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.assembler.prompt_builder import PromptBlocks
from loom_sim.messages import AdversaryMove, MonitorEvent, ProbeOutcome
from loom_sim.models.base import Usage


class Score(msgspec.Struct, frozen=True):
    """One scorer's verdict on one turn: 0..1, higher is better; None when it could not score.

    ``details`` holds the numbers behind the value (judge answers, deterministic measures),
    ``error`` why there is no value (the judge failed after its retries, a refusal...).
    """

    value: float | None
    source: str  # judge | deterministic | mixed
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str | None = None


class RejectedDraft(msgspec.Struct, frozen=True):
    attempt: int
    text: str
    events: list[MonitorEvent]


class InForce(msgspec.Struct, frozen=True, omit_defaults=True):
    """The persona's system prompt in force at a turn: its hash and the turn whose full
    injection sent it. The blocks themselves are kept only on that turn (``blocks``); every
    other turn refers to it, so ``turns.jsonl`` does not repeat them."""

    hash: str
    since: int
    blocks: PromptBlocks | None = None


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
    adversary: AdversaryMove | None = None  # the move behind `interlocutor`, in adversary runs
    probe_outcome: ProbeOutcome | None = None  # the verdict on an earlier probe, reported now
    scores: dict[str, Score] = msgspec.field(default_factory=dict)  # by scorer, after scoring
    scaffolding: InForce | None = None  # the system prompt in force (None: recorded before it)
    vary: str | None = None  # the re-prompt the committed message was written under
    revealed: list[str] = msgspec.field(default_factory=list)  # topics this message revealed


class Aggregate(msgspec.Struct, frozen=True):
    """A scorer's values over turns (or over rollouts): centre and spread, and the headline
    ``value`` its registered aggregation makes of them (the mean, unless it says otherwise)."""

    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    n: int  # values that exist
    failed: int = 0  # turns the scorer tried and could not score
    value: float | None = None  # the headline (None in files from before aggregations)
    aggregation: str = "mean"

    @property
    def headline(self) -> float | None:
        return self.value if self.value is not None or self.n == 0 else self.mean


class Flag(msgspec.Struct, frozen=True):
    turn: int
    reasons: list[str]


class RolloutScores(msgspec.Struct):
    """A scored rollout's summary (transcript.json ``scores``); no timestamps: re-scoring an
    already scored rollout must leave the file byte for byte as it was."""

    rubric_version: str
    judge: str  # the judge's model spec
    judge_window: int
    aggregates: dict[str, Aggregate]  # scorer -> over the rollout's turns
    by_phase: dict[str, dict[str, float | None]]  # phase -> scorer -> mean value
    trajectory_gap: dict[
        str, dict[str, float | None]
    ]  # phase -> dimension -> mean(expressed - prescribed)
    signals: dict[str, Any]  # loop spans, novelty trend, initiative, per-turn curves
    flagged: list[Flag]


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
    scores: RolloutScores | None = None


TURN_ENCODER = msgspec.json.Encoder()
TURN_DECODER = msgspec.json.Decoder(TurnRecord)
TRANSCRIPT_DECODER = msgspec.json.Decoder(Transcript)
