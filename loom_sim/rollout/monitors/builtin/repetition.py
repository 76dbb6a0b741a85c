"""The repetition monitor: banned phrases and formulaic turn shapes are not sent.

Its settings are ``interaction.repetition_detection`` (:mod:`loom_sim.rollout.monitors.repetition`
holds the guard, which ``loom-sim signals`` and the naturalness scorer also run post hoc). A
structural pattern fires only when a shape repeats over ``structural_window`` messages; a
formulaic draft is asked again with what to avoid, concretely.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_sim.config.spec import LoomConfig, RepetitionDetectionSpec
from loom_sim.plugins.monitors import monitor
from loom_sim.rollout.monitors.base import Draft, Finding, Monitor
from loom_sim.rollout.monitors.repetition import RepetitionGuard, formulaic_instruction


@monitor(
    "repetition",
    order=20,
    summary="rejects banned phrases and formulaic shapes (a question, thanks, every turn)",
    config_key="interaction.repetition_detection",
    section=lambda config: config.interaction.repetition_detection,
)
class RepetitionMonitor(Monitor):
    def __init__(self, settings: RepetitionDetectionSpec, config: LoomConfig) -> None:
        super().__init__(settings, config)
        self.guard = RepetitionGuard(settings)

    async def check(self, draft: Draft) -> list[Finding]:
        return self.guard.check(draft.text, draft.previous)

    def instruction(self, findings: Sequence[Finding]) -> str:
        return formulaic_instruction(findings)
