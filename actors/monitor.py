"""The monitor: watches the persona while the conversation runs.

Protocol: ``CheckCandidate`` -> ``Verdict`` (the repetition guard on leaving ``act``);
``Observe`` -> ``Observation`` (the committed exchange: it joins the monitor's window, and
stagnation checks may schedule an emergency injection for the next turn).
"""

from __future__ import annotations

from collections import deque

from loom_sim.config.models import LoomConfig
from loom_sim.messages import Body, CheckCandidate, MonitorEvent, Observation, Observe, Verdict
from loom_sim.monitors.repetition import RepetitionGuard, vary_instruction
from loom_sim.runtime.actor import Actor


class MonitorActor(Actor):
    role = "monitor"

    def __init__(self, config: LoomConfig, *, past_persona: list[str] | None = None):
        spec = config.interaction.repetition_detection
        self._guard = RepetitionGuard(spec)
        self._recent: deque[str] = deque(past_persona or (), maxlen=max(spec.structural_window, 2))

    async def handle(self, body: Body) -> Body | None:
        match body:
            case CheckCandidate():
                return self._check(body)
            case Observe():
                self._recent.append(body.persona)
                return Observation()
        raise TypeError(f"monitor cannot handle {type(body).__name__}")

    def _check(self, request: CheckCandidate) -> Verdict:
        findings = self._guard.check(request.text, list(self._recent))
        if not findings:
            return Verdict(accepted=True)
        events = [
            MonitorEvent(
                monitor="repetition",
                pattern=finding.pattern,
                action="rejected",
                detail=finding.detail,
                attempt=request.attempt,
            )
            for finding in findings
        ]
        return Verdict(accepted=False, events=events, vary=vary_instruction(findings))
