"""Which phase a turn belongs to.

Phases are consecutive windows of turns. A phase ending at ``pct`` covers the turns ``t`` with
``t / horizon < pct``; one ending at ``turn: k`` covers the turns before ``k``; one ending on a
trigger runs until the turn after the trigger fired (or until ``max_turn``). A phase can be
empty when a conversation is too short to reach it; it is skipped, not squeezed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from loom_sim.config.spec import LoomConfig, PctEnd, PhaseSpec, TriggerEnd, TurnEnd

# Guards ceil() against products like 0.7 * 10 = 7.000000000000001.
_EPS = 1e-9


@dataclass(frozen=True)
class PhaseWindow:
    index: int
    spec: PhaseSpec
    start: int
    end: int | None  # exclusive; None: runs until the conversation ends

    @property
    def name(self) -> str:
        return self.spec.name

    def __contains__(self, turn: int) -> bool:
        return self.start <= turn and (self.end is None or turn < self.end)


class PhaseSchedule:
    def __init__(self, config: LoomConfig, horizon: int | None):
        self._phases = config.trajectory.phases
        self._horizon = horizon

    def windows(self, fired: Mapping[str, int] | None = None) -> list[PhaseWindow]:
        """The phase windows, given the turns at which trigger conditions fired (by phase name)."""
        fired = fired or {}
        windows = []
        start = 0
        for index, phase in enumerate(self._phases):
            end = self._end(phase, fired)
            if end is not None:
                end = max(start, end)
            windows.append(PhaseWindow(index, phase, start, end))
            if end is None:
                # An open phase (the last one, or a trigger that has not fired) runs on;
                # the phases after it have not begun.
                break
            start = end
        return windows

    def at(self, turn: int, fired: Mapping[str, int] | None = None) -> PhaseWindow:
        windows = self.windows(fired)
        for window in windows:
            if turn in window:
                return window
        return windows[-1]  # past the last phase's end: the conversation is over; stay in it

    def _end(self, phase: PhaseSpec, fired: Mapping[str, int]) -> int | None:
        match phase.end_condition:
            case None:
                return None
            case PctEnd(value=pct):
                if not self._horizon:
                    return None  # rules forbid pct phases without a horizon
                return math.ceil(pct * self._horizon - _EPS)
            case TurnEnd(value=turn):
                return turn
            case TriggerEnd(max_turn=max_turn):
                candidates = [t + 1 for t in (fired.get(phase.name),) if t is not None]
                if max_turn is not None:
                    candidates.append(max_turn)
                return min(candidates) if candidates else None
        raise TypeError(f"unknown end condition {phase.end_condition!r}")
