"""When a session stops, checked after every turn in a fixed order: success first (a goal
reached on the last allowed turn is a success), then the budgets, then the turn limit."""

from __future__ import annotations

from loom_sim.core.stops import Stop as CoreStop
from loom_sim.harness.machines.session import StopReason
from loom_sim.harness.packs import Scenario
from loom_sim.harness.records import HarnessTurn

Stop = CoreStop[StopReason]  # why a session ended: a harness reason and a sentence


def total_cost(turns: list[HarnessTurn]) -> float | None:
    """Models' cost (None when any call's price is unknown) plus what the target reported."""
    total = 0.0
    for turn in turns:
        for usage in turn.usage.values():
            if usage.cost_usd is None:
                return None
            total += usage.cost_usd
        total += turn.target_cost_usd
    return round(total, 6)


def failures_in_a_row(turns: list[HarnessTurn]) -> int:
    count = 0
    for turn in reversed(turns):
        if not turn.failed:
            break
        count += 1
    return count


def after_turn(scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float) -> Stop | None:
    budget = scenario.budget
    last = turns[-1]
    if last.evaluation.results and all(r.met is True for r in last.evaluation.results):
        return Stop(StopReason.SUCCESS, "every success criterion met")
    cost = total_cost(turns)
    if budget.max_cost_usd is not None and cost is not None and cost >= budget.max_cost_usd:
        return Stop(StopReason.MAX_COST, f"${cost:.4f} spent of ${budget.max_cost_usd:g}")
    if budget.max_runtime_s is not None and elapsed_s >= budget.max_runtime_s:
        return Stop(StopReason.MAX_RUNTIME, f"{budget.max_runtime_s:g} s of runtime used")
    failed = failures_in_a_row(turns)
    if failed >= budget.max_consecutive_failures:
        return Stop(StopReason.CONSECUTIVE_FAILURES, f"{failed} failed actions in a row")
    if len(turns) >= budget.max_turns:
        return Stop(StopReason.MAX_TURNS, f"{len(turns)} turns")
    return None
