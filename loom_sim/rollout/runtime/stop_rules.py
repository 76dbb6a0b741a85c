"""When a rollout ends, and why: the rules checked at each turn boundary.

A rollout stops when it has its turns, when the last phase of a phase-gated or open-ended
trajectory has ended, when the run's cost or runtime budget is reached, or after too many
failed turns in a row. Each rule gives a reason (a stable key for scripts) and a sentence for
people; the first that holds wins, checked in that order.
"""

from __future__ import annotations

from loom_sim.assembler import Assembler
from loom_sim.config.spec import LoomConfig, TrajectoryMode
from loom_sim.core.stops import Stop as CoreStop
from loom_sim.core.stops import StopReason
from loom_sim.rollout.runtime.budget import RunBudget


class RolloutStopReason(StopReason):
    """Why a rollout ended (its transcript's ``stop_reason``)."""

    MAX_TURNS = "max_turns"
    PHASE_GATED_END = "phase_gated_end"
    COST_BUDGET = "cost_budget"
    RUNTIME_BUDGET = "runtime_budget"
    CONSECUTIVE_FAILURES = "consecutive_failures"


Stop = CoreStop[RolloutStopReason]  # why a rollout ended: a rollout reason and a sentence


class StopRules:
    def __init__(self, config: LoomConfig, turns: int, assembler: Assembler, budget: RunBudget):
        self._config = config
        self._turns = turns
        self._assembler = assembler
        self._budget = budget

    def before_start(self, done: int) -> Stop | None:
        """A resumed rollout that already has all its turns."""
        if done >= self._turns:
            return Stop(RolloutStopReason.MAX_TURNS, f"{done} of {self._turns} turns")
        return None

    def after_turn(self, done: int, fired: dict[str, int]) -> Stop | None:
        """After ``done`` turns are recorded, with these trigger phases fired."""
        if done >= self._turns:
            return Stop(RolloutStopReason.MAX_TURNS, f"{done} of {self._turns} turns")
        trajectory = self._config.trajectory
        last = trajectory.phases[-1]
        if trajectory.mode is not TrajectoryMode.FIXED_LENGTH and last.end_condition is not None:
            final = self._assembler.phases.windows(fired)[-1]
            if (
                final.index == len(trajectory.phases) - 1
                and final.end is not None
                and done >= final.end
            ):
                return Stop(
                    RolloutStopReason.PHASE_GATED_END,
                    f"the last phase {last.name!r} ended at turn {done - 1}",
                )
        exceeded = self._budget.exceeded()
        return Stop(RolloutStopReason(exceeded[0]), exceeded[1]) if exceeded else None

    def after_failure(self, in_a_row: int, last_error: str) -> Stop | None:
        """After a turn that got no usable reply, ``in_a_row`` such turns so far."""
        limit = self._config.conversation.max_consecutive_failures
        if in_a_row >= limit:
            return Stop(
                RolloutStopReason.CONSECUTIVE_FAILURES,
                f"{in_a_row} failed turns in a row (last: {last_error})",
            )
        return None
