"""When the persona receives its scaffolding.

Re-sending the full scaffolding every turn is expensive and makes models parrot it; never
re-sending it lets a long conversation drift. So: the full MUST DO / HOW / CONTEXT prompt at
turns 0, f, 2f, ...; a short reminder every ``reminder_frequency`` turns in between; nothing
otherwise (the persona keeps the last prompt it was given).
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

    def kind(self, turn: int, *, phase_starts: bool = False) -> InjectionKind:
        spec = self._spec
        if turn % spec.frequency == 0 or (phase_starts and spec.full_on_phase_change):
            return InjectionKind.FULL
        if spec.reminder_frequency and turn % spec.reminder_frequency == 0:
            return InjectionKind.REMINDER
        return InjectionKind.NONE
