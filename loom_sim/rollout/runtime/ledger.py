"""What a rollout has spent: tokens and dollars by role, and the run's budget charged as it goes.

Every call is charged to the run's budget the moment it returns (a failed attempt at a turn
still cost money); a turn's usage joins the rollout's totals when the turn is recorded, so the
totals are always the sum of ``turns.jsonl``. An unknown price stays unknown (``None``).
"""

from __future__ import annotations

from loom_sim.models.base import Usage
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.store.records import TurnRecord


def add_usage(totals: dict[str, Usage], role: str, usage: Usage) -> None:
    """Add ``usage`` to ``role``'s running total (an unknown cost stays unknown)."""
    totals[role] = totals[role] + usage if role in totals else usage


class Ledger:
    def __init__(self, budget: RunBudget):
        self.budget = budget
        self.by_role: dict[str, Usage] = {}

    def spend(self, usage: Usage) -> None:
        """A call just made: the run's budget, at once."""
        self.budget.charge(usage)

    def book(self, by_role: dict[str, Usage]) -> None:
        """A recorded turn's usage: the rollout's totals."""
        for role, usage in by_role.items():
            add_usage(self.by_role, role, usage)

    def restore(self, records: list[TurnRecord]) -> None:
        """A resumed rollout's past turns: its totals, and what they cost the run."""
        for record in records:
            self.book(record.usage)
            for usage in record.usage.values():
                self.spend(usage)

    @property
    def tokens(self) -> int:
        return sum(u.input_tokens + u.output_tokens for u in self.by_role.values())

    @property
    def cost(self) -> float | None:
        total: float | None = 0.0
        for usage in self.by_role.values():
            total = None if total is None or usage.cost_usd is None else total + usage.cost_usd
        return total
