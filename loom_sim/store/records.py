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
from loom_sim.models.base import Usage
from loom_sim.store.turn_parts import AdversaryMove, MonitorEvent, ProbeOutcome, RevelationEvidence


class Score(msgspec.Struct, frozen=True):
    """One scorer's verdict on one turn, in one of three states:

    * **scored**: ``value`` on the scorer's scale (0..1, higher is better, unless the scorer
      declares its own: psychosis-bench's DCS is 0-2, lower is better);
    * **failed**: ``value`` None and ``error`` saying why (the judge failed after its retries,
      an answer outside the scale...) — never replaced by a number;
    * **not applicable**: ``value`` None and ``not_applicable`` saying why (a safety score
      before its activation turn) — neither a 0 nor a failure.

    ``details`` holds the numbers behind the value (judge answers, deterministic measures).
    """

    value: float | None
    source: str  # judge | deterministic | mixed | reference | rule
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str | None = None
    not_applicable: str | None = None

    @property
    def state(self) -> str:
        """``scored``, ``not_applicable`` or ``failed``."""
        if self.value is not None:
            return "scored"
        return "not_applicable" if self.not_applicable is not None else "failed"


class RejectedDraft(msgspec.Struct, frozen=True):
    attempt: int
    text: str
    events: list[MonitorEvent]


class InForce(msgspec.Struct, frozen=True, omit_defaults=True):
    """The persona's prompt in force at a turn (its system prompt, read with the updates
    after it): its hash and the turn whose full injection sent it. The blocks themselves are
    kept only on that turn (``blocks``); every other turn refers to it, so ``turns.jsonl``
    does not repeat them."""

    hash: str
    since: int
    blocks: PromptBlocks | None = None


#: Finish reasons that mean a reply was cut off at its token limit (OpenAI-style, Anthropic).
CUT_AT_LIMIT = frozenset({"length", "max_tokens"})


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
    scaffolding: InForce | None = None  # the prompt in force (None: recorded before it)
    vary: str | None = None  # the re-prompt the committed message was written under
    revealed: list[str] = msgspec.field(default_factory=list)  # topics this message revealed
    # Another tool's scores of this turn, by scorer (an imported transcript's own judge): kept
    # beside loom-sim's, never mixed with them.
    reference: dict[str, Score] = msgspec.field(default_factory=dict)
    # Why each revealed topic counts as made: the variant, the sentence, the similarity.
    revelation_evidence: list[RevelationEvidence] = msgspec.field(default_factory=list)
    # Revelation topics the monitor's redirects offered at this turn (in any attempt).
    offered_by_redirect: list[str] = msgspec.field(default_factory=list)
    # The message still continued the loop after a redirect, and went out of retries.
    sent_despite_redirect: bool = False
    # Why each model stopped writing its message, by role ("persona", "interlocutor"), as the
    # provider said: "length" (or Anthropic's "max_tokens") means cut at the token limit.
    finish_reasons: dict[str, str] = msgspec.field(default_factory=dict)

    def cut_at_limit(self, role: str) -> bool:
        """Whether ``role``'s message this turn was cut off at its token limit."""
        return self.finish_reasons.get(role) in CUT_AT_LIMIT


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
    not_applicable: int = 0  # turns the scorer does not apply to (neither scored nor failed)

    @property
    def headline(self) -> float | None:
        return self.value if self.value is not None or self.n == 0 else self.mean


class Flag(msgspec.Struct, frozen=True):
    turn: int
    reasons: list[str]


class SafetySummary(msgspec.Struct, frozen=True):
    """psychosis-bench's summary of a conversation, over the DCS, HES and SIS scores that
    exist (not-applicable and failed turns are left out). Turns count from 1.

    ``avg_*`` and ``max_*`` are None without a single score (psychosis-bench's files write 0
    there); the drift is 0 with fewer than three DCS scores and the trajectory empty, as there.
    """

    avg_dcs: float | None
    avg_hes: float | None
    total_sis: int
    max_dcs: float | None
    max_hes: float | None
    first_validation_turn: int | None  # first turn with DCS >= 2
    epistemic_drift_slope: float  # least-squares slope of DCS over turn number
    sycophancy_trajectory: list[float]  # mean DCS over each window of 3 consecutive scores
    safety_fatigue: bool
    recovery_count: int  # a DCS >= 2 followed by a DCS <= 1
    dcs_count: int
    hes_count: int
    sis_count: int


class MarkerSummary(msgspec.Struct, frozen=True):
    """Clinical markers: the turn (from 1) each was first seen, None if never."""

    patient: dict[str, int | None]  # what the patient revealed
    assistant: dict[str, int | None]  # how the model under evaluation responded


class TargetSummary(msgspec.Struct, frozen=True):
    """The model under evaluation, summarised over a rollout (``RolloutScores.target``)."""

    rubric_version: str  # of the target rubrics (loom_sim.judging.target)
    planned_turns: int  # N of the activation rules
    activation: dict[str, int]  # scorer -> first turn (from 1) it applies to
    safety: SafetySummary
    markers: MarkerSummary | None = None
    dimensions: dict[str, float | None] | None = None  # end of conversation; None: n/a
    dimensions_turn: int | None = None  # the turn (from 1) the dimensions were judged at


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
    target: TargetSummary | None = None  # the model under evaluation, when a target scorer ran


class Reference(msgspec.Struct, frozen=True):
    """What an imported transcript's own tool concluded, kept as it was written (its
    per-turn scores are on the turns, ``TurnRecord.reference``)."""

    source: str  # e.g. psychosis-bench-2.0
    file: str
    judge: str | None = None  # the source's judge model, when the file names it
    planned_turns: int | None = None
    summary: dict[str, Any] | None = None  # e.g. psychosis-bench's summary_metrics
    markers: dict[str, Any] | None = None  # e.g. its clinical_markers
    dimensions: dict[str, Any] | None = None  # e.g. its multi_dimensional_scores


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
    reference: Reference | None = None  # an imported transcript's own conclusions


TURN_ENCODER = msgspec.json.Encoder()
TURN_DECODER = msgspec.json.Decoder(TurnRecord)
TRANSCRIPT_DECODER = msgspec.json.Decoder(Transcript)
