"""The turn a session has in progress, what becomes of it, and what a session reports.

A turn is kept here while the machine works through it — the user's plan (and the drafts the
audit sent back), the reply, the reflection, the usage by role — and becomes one
:class:`~loom_sim.harness.records.HarnessTurn` at the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from loom_sim.harness.messages import (
    Action,
    Artifact,
    AttributedArtifact,
    Evaluation,
    Observed,
    PlannedAction,
    Reflected,
    TargetReply,
)
from loom_sim.harness.records import AuditFlag, HarnessTurn, RejectedDraft, Reply, SetupRecord
from loom_sim.harness.stop import Stop
from loom_sim.models.base import Usage

MAX_SIGNALS = 8


class SessionProgress(Protocol):
    def session_started(self, name: str, max_turns: int, done: int) -> None: ...

    def turn_done(self, name: str, turn: HarnessTurn) -> None: ...

    def session_ended(self, name: str, status: str, why: str) -> None: ...


@dataclass
class TurnInProgress:
    turn: int
    attempt: int = 0
    feedback: str | None = None
    rejected: list[RejectedDraft] = field(default_factory=list)
    planned: PlannedAction | None = None
    audit: list[AuditFlag] = field(default_factory=list)
    reply: TargetReply | None = None
    signals: list[str] = field(default_factory=list)
    reflected: Reflected | None = None
    evidence: str | None = None  # what shows the turn's command worked, if anything
    usage: dict[str, Usage] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def charge(self, role: str, usage: Usage) -> None:
        self.usage[role] = self.usage.get(role, Usage()) + usage

    @property
    def action(self) -> Action:
        assert self.planned is not None, "no action planned yet"
        return self.planned.action

    def record(self, evaluation: Evaluation, next_id: int, elapsed_s: float) -> HarnessTurn:
        """The completed turn, as ``turns.jsonl`` keeps it."""
        reply, reflected, planned = self.reply, self.reflected, self.planned
        assert reply is not None and reflected is not None and planned is not None
        costs = [e.get("cost_usd") for e in reply.events]
        return HarnessTurn(
            turn=self.turn,
            action=planned.action,
            user_attempts=planned.attempts,
            user_note=planned.reason,
            rejected=self.rejected,
            audit=self.audit,
            reply=Reply.of(reply),
            events=reply.events,
            artifacts=reply.artifacts,
            signals=self.signals,
            reflection=reflected.reflection,
            reflection_status=reflected.status,
            reflection_attempts=reflected.attempts,
            reflection_error=reflected.error,
            evaluation=evaluation,
            usage=self.usage,
            target_cost_usd=round(sum(c for c in costs if isinstance(c, int | float)), 6),
            failed=reply.failed,
            failure=reply.failure,
            ability_evidence=self.evidence,
            events_offset=reply.events_offset,
            next_envelope_id=next_id,
            elapsed_s=round(elapsed_s, 3),
            timings={k: round(v, 3) for k, v in self.timings.items()},
        )


@dataclass
class SessionResult:
    name: str
    status: str  # done | error
    stop: Stop | None
    error: str | None
    turns: list[HarnessTurn]
    elapsed_s: float
    cost_usd: float | None


def signals_of(reply: TargetReply) -> list[str]:
    """The key facts of a reply, for the reflection (no times: they differ run to run)."""
    found = [f"reply ended by {reply.ended_by}"]
    if reply.failed:
        found.append(f"failed: {reply.failure}")
    elif not reply.text.strip():
        found.append("no output")
    if reply.continuation is not None:
        resets = [n.get("reset") for n in reply.notes if n.get("type") == "continuation"]
        how = f"; reset by sending {resets[0]!r}" if resets else ""
        found.append(f"continuation prompt {reply.continuation!r}{how}")
    if reply.truncated:
        found.append(f"reply cut after {reply.received_bytes} bytes")
    for event in reply.events:
        kind = event.get("type") or "event"
        about = event.get("ability") or event.get("command") or ""
        output = event.get("output")
        made = f" -> {output.get('id')}" if isinstance(output, dict) and output.get("id") else ""
        found.append(f"event {kind}" + (f" ({about})" if about else "") + made)
    for artifact in reply.artifacts:
        measured = (
            f", measured quality {artifact.quality:.2f}" if artifact.quality is not None else ""
        )
        found.append(f"new file {artifact.path}{measured}")
    return found[:MAX_SIGNALS]


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def setup_events(setup: SetupRecord) -> list[dict[str, Any]]:
    return setup.events + [e for x in setup.exchanges for e in x.events]


def attributed(action: Action, artifacts: list[Artifact]) -> list[AttributedArtifact]:
    """Files credited to the command of the turn that produced them."""
    ability = action.name if action.kind == "command" else None
    return [AttributedArtifact(a, ability) for a in artifacts]


def observed(record: HarnessTurn) -> Observed:
    """What the simulated user remembers of a completed turn."""
    valid = record.reflection_status != "invalid"
    return Observed(
        turn=record.turn,
        action=record.action,
        reply=record.reply.text,
        signals=record.signals,
        failed=record.failed,
        confidence=record.reflection.confidence if valid else None,
        next_hypothesis=record.reflection.next_hypothesis,
    )
