"""The run's budgets: money and time, shared by all its rollouts.

Rollouts check at every turn boundary, so a budget stops a run within one turn of being
reached and never cuts a turn in half. A price that is unknown cannot be counted: the run says
so at the start, and refuses a cost budget it could not keep (``make_hub``), instead of
pretending such calls cost nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from loom_sim.models.base import Usage


class RunBudget:
    def __init__(
        self,
        max_cost_usd: float | None = None,
        max_runtime_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        started: float | None = None,
    ):
        self.max_cost_usd = max_cost_usd
        self.max_runtime_s = max_runtime_s
        self._clock = clock
        # A worker's share of a run measures the runtime budget from the run's start (on the
        # same ``clock``), not from its own.
        self._started = clock() if started is None else started
        self.cost_usd = 0.0

    def charge(self, usage: Usage) -> None:
        if usage.cost_usd is not None:  # unknown prices were refused up front under a budget
            self.cost_usd += usage.cost_usd

    def exceeded(self) -> tuple[str, str] | None:
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return (
                "cost_budget",
                f"spent ${self.cost_usd:.4f} of the ${self.max_cost_usd:g} budget",
            )
        if self.max_runtime_s is not None:
            elapsed = self._clock() - self._started
            if elapsed >= self.max_runtime_s:
                return (
                    "runtime_budget",
                    f"ran {elapsed:.1f}s of the {self.max_runtime_s:g}s budget",
                )
        return None
