"""The turn in progress: what a rollout gathers while a turn is under way, and the record it
becomes once the exchange is complete."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom_sim.assembler import TurnPlan
from loom_sim.messages import Utterance
from loom_sim.models.base import Usage
from loom_sim.rollout.messages import Verdict
from loom_sim.rollout.runtime.ledger import add_usage
from loom_sim.store.records import InForce, RejectedDraft, TurnRecord
from loom_sim.store.turn_parts import AdversaryMove, MonitorEvent, ProbeOutcome, RevelationEvidence


@dataclass
class TurnInProgress:
    plan: TurnPlan
    started_at: float
    in_force: InForce | None = None  # the system prompt the persona holds this turn
    offered: frozenset[str] = frozenset()  # revelation topics that prompt offers
    attempt: int = 0
    candidate: Utterance | None = None
    verdict: Verdict | None = None
    vary: str | None = None  # the note the current attempt is written under
    redirect: str | None = None  # a stagnation redirect given at this turn
    rejected: list[RejectedDraft] = field(default_factory=list)
    events: list[MonitorEvent] = field(default_factory=list)
    reply: Utterance | None = None
    move: AdversaryMove | None = None  # the adversary's, when one answered
    judged: ProbeOutcome | None = None
    usage: dict[str, Usage] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    failed: str | None = None  # why this attempt at the turn produced no usable exchange
    offered_by_redirect: list[str] = field(default_factory=list)  # by the monitor's redirects
    sent_despite_redirect: bool = False  # still looping after a redirect, out of retries
    revealed: list[RevelationEvidence] = field(default_factory=list)  # the monitor's verdict

    def charge(self, role: str, usage: Usage) -> None:
        add_usage(self.usage, role, usage)

    @property
    def committed(self) -> Utterance:
        """The persona's message this turn, once the guard let it through."""
        if self.candidate is None:
            raise RuntimeError(f"turn {self.plan.turn}: no persona message yet")
        return self.candidate

    @property
    def answer(self) -> Utterance:
        """The responder's reply this turn, once it came."""
        if self.reply is None:
            raise RuntimeError(f"turn {self.plan.turn}: no reply yet")
        return self.reply

    def record(
        self,
        fired: dict[str, int],
        pending_emergency: str | None,
        failed_attempts: int,
        ended: float,
        next_id: int,
        revealed: list[RevelationEvidence],
    ) -> TurnRecord:
        """The completed turn, as ``turns.jsonl`` keeps it."""
        plan = self.plan
        timings = dict(self.timings)
        timings["turn_s"] = ended - self.started_at
        return TurnRecord(
            turn=plan.turn,
            phase=plan.phase,
            phase_index=plan.phase_index,
            progress=plan.progress,
            intensities=plan.intensities,
            levels=plan.levels,
            injection=plan.injection,
            persona=self.committed.text,
            interlocutor=self.answer.text,
            reminder=plan.reminder,
            emergency=plan.emergency,
            revelations=[f"{r.topic}:{r.variant}" for r in plan.revelations],
            persona_attempts=self.attempt + 1,
            rejected=self.rejected,
            monitor_events=self.events,
            usage=self.usage,
            timings=timings,
            cut_turns={"persona": self.committed.cut_turns, "interlocutor": self.answer.cut_turns},
            fired=dict(fired),
            pending_emergency=pending_emergency,
            failed_attempts=failed_attempts,
            started_at=self.started_at,
            ended_at=ended,
            next_envelope_id=next_id,
            adversary=self.move,
            probe_outcome=self.judged,
            scaffolding=self.in_force,
            vary=self.vary,
            revealed=list(dict.fromkeys(e.topic for e in revealed)),
            revelation_evidence=revealed,
            offered_by_redirect=self.offered_by_redirect,
            sent_despite_redirect=self.sent_despite_redirect,
            finish_reasons={
                role: reason
                for role, reason in (
                    ("persona", self.committed.finish_reason),
                    ("interlocutor", self.answer.finish_reason),
                )
                if reason
            },
        )


def with_action(event: MonitorEvent, action: str) -> MonitorEvent:
    return MonitorEvent(
        monitor=event.monitor,
        pattern=event.pattern,
        action=action,
        detail=event.detail,
        attempt=event.attempt,
        values=event.values,
    )
