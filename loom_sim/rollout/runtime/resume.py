"""Continuing a rollout from its ``turns.jsonl``: everything the next turn depends on.

A killed run loses at most the turn in progress. What the next turn needs is rebuilt from the
completed records — the triggers fired, a pending emergency injection, the system prompt in
force (its blocks, as recorded on the turn that injected them), the revelations already made
and those the prompt in force offers, usage, the next envelope id — and each actor rebuilds
its own view (histories, the monitor's windows, an adversary's moves) from the same records.
Seeds depend only on (run seed, rollout, role, turn, attempt), so the resumed turns are the
ones an uninterrupted run would have made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom_sim.assembler import Assembler, InjectionKind, PromptBlocks
from loom_sim.store.records import InForce, TurnRecord


@dataclass(frozen=True)
class Resumed:
    fired: dict[str, int] = field(default_factory=dict)  # trigger phases -> turn
    pending_emergency: str | None = None  # scheduled for the next turn
    scaffolding: str = ""  # the persona's system prompt: the last full injection's
    next_envelope_id: int = 1
    in_force: InForce | None = None  # the reference later turns record (no blocks)
    blocks: PromptBlocks | None = None  # the prompt in force, to tell the persona a change
    offered: frozenset[str] = frozenset()  # revelation topics the prompt in force offers
    revealed: frozenset[str] = frozenset()  # topics the persona has revealed


def resume(records: list[TurnRecord], assembler: Assembler) -> Resumed:
    if not records:
        return Resumed()
    last = records[-1]
    revealed = frozenset(topic for r in records for topic in r.revealed)
    injected = next(
        (r for r in reversed(records) if r.scaffolding is not None and r.scaffolding.blocks),
        None,
    )
    if injected is not None and injected.scaffolding is not None:
        blocks = injected.scaffolding.blocks
        return Resumed(
            fired=dict(last.fired),
            pending_emergency=last.pending_emergency,
            scaffolding=blocks.render() if blocks is not None else "",
            next_envelope_id=last.next_envelope_id,
            in_force=InForce(injected.scaffolding.hash, injected.scaffolding.since),
            blocks=blocks,
            offered=frozenset(item.partition(":")[0] for item in injected.revelations),
            revealed=revealed,
        )
    # recorded before the prompt in force was kept: re-plan the last full injection
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
        revealed=revealed,
    )
