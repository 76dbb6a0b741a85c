"""Continuing a rollout from its ``turns.jsonl``: everything the next turn depends on.

A killed run loses at most the turn in progress. What the next turn needs is rebuilt from the
completed records — the triggers fired, a pending emergency injection, the last full
scaffolding the persona was given, usage, the next envelope id — and each actor rebuilds its
own view (histories, the monitor's windows, an adversary's moves) from the same records. Seeds
depend only on (run seed, rollout, role, turn, attempt), so the resumed turns are the ones an
uninterrupted run would have made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom_sim.assembler import Assembler, InjectionKind
from loom_sim.store.records import TurnRecord


@dataclass(frozen=True)
class Resumed:
    fired: dict[str, int] = field(default_factory=dict)  # trigger phases -> turn
    pending_emergency: str | None = None  # scheduled for the next turn
    scaffolding: str = ""  # the persona's system prompt: the last full injection's
    next_envelope_id: int = 1


def resume(records: list[TurnRecord], assembler: Assembler) -> Resumed:
    if not records:
        return Resumed()
    last = records[-1]
    last_full = max((r.turn for r in records if r.injection == InjectionKind.FULL), default=None)
    scaffolding = ""
    if last_full is not None:
        prompt = assembler.plan(last_full, last.fired).prompt
        scaffolding = prompt.render() if prompt is not None else ""
    return Resumed(
        fired=dict(last.fired),
        pending_emergency=last.pending_emergency,
        scaffolding=scaffolding,
        next_envelope_id=last.next_envelope_id,
    )
