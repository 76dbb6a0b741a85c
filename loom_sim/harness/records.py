"""What a harness session writes as it goes: one record per completed turn, one per start.

``turns.jsonl`` is the session's commit log: a turn is appended once it is complete (action,
reply, events, files, reflection, evaluation, usage), and a resumed session rebuilds itself
from it. ``setup.jsonl`` keeps each start of the target (its greeting and the setup lines).
``transcript.jsonl``, ``reflections.jsonl`` and ``events.jsonl`` are views of these two,
appended as turns complete and rewritten from them when a session resumes, so no view ever
holds a turn the log does not.
"""

from __future__ import annotations

from typing import Any

import msgspec

from loom_sim.harness.messages import (
    Action,
    Artifact,
    Evaluation,
    Reflection,
    TargetReply,
)
from loom_sim.models.base import Usage

TURNS_FILE = "turns.jsonl"
SETUP_FILE = "setup.jsonl"
TRANSCRIPT_FILE = "transcript.jsonl"
REFLECTIONS_FILE = "reflections.jsonl"
EVENTS_FILE = "events.jsonl"
SESSION_FILE = "session.json"
SCORECARD_FILE = "scorecard.json"
SUMMARY_FILE = "summary.json"
TRACE_FILE = "trace.jsonl"
CAST_FILE = "session.cast"
INPUTS_DIR = "inputs"
TARGET_DIR = "target"


class AuditFlag(msgspec.Struct, frozen=True):
    """A known simulator failure, found in a draft of the simulated user."""

    kind: str  # role_flip | invented_reference | repeated_action
    detail: str


class RejectedDraft(msgspec.Struct, frozen=True):
    text: str
    flags: list[AuditFlag]


class Reply(msgspec.Struct, frozen=True):
    """A reply as the log keeps it (the events and files are kept beside it)."""

    text: str
    ended_by: str
    duration_s: float = 0.0
    truncated: bool = False
    received_bytes: int = 0
    screen: list[str] = msgspec.field(default_factory=list)
    failed: bool = False
    failure: str | None = None
    continuation: str | None = None  # the continuation prompt the program stopped at
    reset: str | None = None  # the line sent to get it out of there, if the pack gives one

    @classmethod
    def of(cls, reply: TargetReply) -> Reply:
        resets = [n.get("reset") for n in reply.notes if n.get("type") == "continuation"]
        return cls(
            reply.text,
            reply.ended_by,
            reply.duration_s,
            reply.truncated,
            reply.received_bytes,
            reply.screen,
            reply.failed,
            reply.failure,
            reply.continuation,
            resets[0] if resets else None,
        )

    @property
    def silent(self) -> bool:
        """The program printed nothing (and did not fail for it): "no output", not failure."""
        return not self.text.strip() and self.ended_by in ("prompt", "idle", "complete")


class HarnessTurn(msgspec.Struct, kw_only=True):
    turn: int
    action: Action
    user_attempts: int = 1
    user_note: str = ""  # how the user's answer had to be read, if not as asked
    rejected: list[RejectedDraft] = msgspec.field(default_factory=list)
    audit: list[AuditFlag] = msgspec.field(default_factory=list)  # flags on the action taken
    reply: Reply
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)
    artifacts: list[Artifact] = msgspec.field(default_factory=list)
    signals: list[str] = msgspec.field(default_factory=list)
    reflection: Reflection
    reflection_status: str = "valid"
    reflection_attempts: int = 1
    reflection_error: str | None = None
    evaluation: Evaluation
    usage: dict[str, Usage] = msgspec.field(default_factory=dict)  # by role
    target_cost_usd: float = 0.0  # what the target's events say it spent
    failed: bool = False
    failure: str | None = None
    # what the target left that shows the turn's command worked (an event naming it, a new
    # file, a reply matching the ability's evidence pattern); None: the ability is not credited
    ability_evidence: str | None = None
    events_offset: int = 0  # how far the target's event file was read
    next_envelope_id: int = 1
    elapsed_s: float = 0.0  # the session's running time when this turn was committed
    timings: dict[str, float] = msgspec.field(default_factory=dict)


class SetupExchange(msgspec.Struct, frozen=True):
    line: str
    reply: Reply
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)


class SetupRecord(msgspec.Struct, kw_only=True):
    """One start of the target: its greeting and the setup lines, and how many turns were
    already complete (0, or more when a session resumed)."""

    start: int
    after_turn: int
    greeting: Reply
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)
    exchanges: list[SetupExchange] = msgspec.field(default_factory=list)
    events_offset: int = 0
    # What the event file gained after the last committed turn and before this start: a lost
    # turn's side effects, kept for the record and counted by nothing.
    orphaned_events: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def turn(self) -> int:  # the log numbers starts 0, 1, 2... like turns
        return self.start


TURN_DECODER = msgspec.json.Decoder(HarnessTurn)
SETUP_DECODER = msgspec.json.Decoder(SetupRecord)
