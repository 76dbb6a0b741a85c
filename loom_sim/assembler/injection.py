"""When the persona receives its scaffolding.

Re-sending the full scaffolding every turn is expensive and makes models parrot it; never
re-sending it lets a long conversation drift. So: the full MUST DO / HOW / CONTEXT prompt at
turns 0, f, 2f, ...; a short reminder every ``reminder_frequency`` turns in between; nothing
otherwise (the persona keeps the last prompt it was given).

Two events cannot wait for the schedule, because the prompt the persona holds would then
contradict the turn's instructions: a phase starts (by default the full prompt goes at once;
with ``full_on_phase_change: false`` the turn gets at least a reminder, which carries the new
phase's MUST DO), and the prompt in force offers a revelation the persona has since made
(``refresh``: the full prompt goes again, without it).
"""

from __future__ import annotations

from enum import StrEnum

from loom_sim.config.spec import InjectionSpec


class InjectionKind(StrEnum):
    FULL = "full"
    REMINDER = "reminder"
    NONE = "none"


class InjectionScheduler:
    def __init__(self, spec: InjectionSpec):
        self._spec = spec

    def kind(
        self, turn: int, *, phase_starts: bool = False, refresh: bool = False
    ) -> InjectionKind:
        spec = self._spec
        if turn % spec.frequency == 0 or refresh or (phase_starts and spec.full_on_phase_change):
            return InjectionKind.FULL
        if phase_starts or (spec.reminder_frequency and turn % spec.reminder_frequency == 0):
            return InjectionKind.REMINDER
        return InjectionKind.NONE
