"""The monitor: watches the persona while the conversation runs.

Protocol: ``CheckCandidate`` -> ``Verdict`` (on leaving ``act``: the repetition guard, the
capitulation phrases, and the stagnation and convergence checks of the candidate as if it were
sent — a looping candidate is rejected with the emergency redirect, with the numbers that
caused it, so the loop never reaches the interlocutor); ``Observe`` -> ``Observation`` (the
committed exchange joins the monitor's windows).
"""

from __future__ import annotations

import string
from collections import deque
from typing import TYPE_CHECKING

import trio
from loom_sim.actors.base import Actor, ActorContext

from loom_sim.assembler.revelations import FALLBACK, RevelationTracker
from loom_sim.config.spec import LoomConfig, ResistanceLevel
from loom_sim.messages import Body, CheckCandidate, MonitorEvent, Observation, Observe, Verdict
from loom_sim.monitors.capitulation import CapitulationCheck
from loom_sim.monitors.repetition import RepetitionGuard, vary_instruction
from loom_sim.plugins.actors import actor
from loom_sim.store.records import TurnRecord

if TYPE_CHECKING:
    from loom_sim.signals.stagnation import StagnationMonitor, Trigger

STAGNATION_MONITORS = ("stagnation", "convergence")


@actor(
    "monitor",
    summary="the repetition guard on every candidate; stagnation and convergence checks",
    order=40,
)
class MonitorActor(Actor):
    role = "monitor"

    def __init__(
        self,
        config: LoomConfig,
        *,
        records: list[TurnRecord] | None = None,
        turns: int | None = None,
    ):
        records = records or []
        self._config = config
        self._turns = turns
        spec = config.interaction.repetition_detection
        anti = config.interaction.anti_capitulation
        told = anti.resistance_level.rank > ResistanceLevel.LOW.rank  # in MUST DO only then
        self._guard = RepetitionGuard(
            spec, CapitulationCheck(anti.forbidden_phrases if told else ())
        )
        self._redirects = [r.replacement for r in anti.redirects]
        self._recent: deque[str] = deque(
            (r.persona for r in records), maxlen=max(spec.structural_window, 2)
        )
        self._revelations = RevelationTracker(config)
        for record in records:
            self._revelations.heard(record.persona)
            # A revelation is used the moment the monitor offers it: on the re-prompt that
            # carries the redirect (`vary`), or, with no retry left to ride on, in the next
            # turn's `emergency`, which the turn that fired records as pending. A run killed
            # in between has only the pending one.
            for sent in (record.emergency, record.vary, record.pending_emergency):
                if sent:
                    self._mark_offered(sent)
        self._last_trigger = max(
            (r.turn for r in records for e in r.monitor_events if e.monitor in STAGNATION_MONITORS),
            default=None,
        )
        self._resume_from = [(r.turn, r.persona, r.interlocutor) for r in records]
        self._stagnation: StagnationMonitor | None = None  # built on first use, off the loop

    @classmethod
    def from_context(cls, context: ActorContext) -> MonitorActor:
        return cls(context.need_config("monitor"), records=context.records, turns=context.turns)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case CheckCandidate():
                return await self._check(body)
            case Observe():
                return await self._observe(body)
        raise TypeError(f"monitor cannot handle {type(body).__name__}")

    async def _check(self, request: CheckCandidate) -> Verdict:
        findings = self._guard.check(request.text, list(self._recent))
        events = [
            MonitorEvent(
                monitor=finding.monitor,
                pattern=finding.pattern,
                action="rejected",
                detail=finding.detail,
                attempt=request.attempt,
            )
            for finding in findings
        ]
        vary = vary_instruction(findings, self._redirects) if findings else None
        redirect, looped = await self._redirect(request)
        if not findings and redirect is None:
            return Verdict(accepted=True)
        return Verdict(accepted=False, events=events + looped, vary=vary, redirect=redirect)

    async def _redirect(self, request: CheckCandidate) -> tuple[str | None, list[MonitorEvent]]:
        """The emergency redirect, when sending this candidate would continue a loop."""
        if not self._config.interaction.stagnation_detection.enabled:
            return None, []
        monitor = await self._stagnation_monitor()
        fired = await trio.to_thread.run_sync(monitor.candidate, request.turn, request.text)
        if not fired:
            return None, []
        emergency, topic = self._intervention(
            request.turn, request.phase_index, request.intensities
        )
        events = [
            MonitorEvent(
                monitor=trigger.kind,
                pattern=_pattern(trigger),
                action="emergency_injection",
                attempt=request.attempt,
                detail=f"{trigger.kind} {trigger.value:.3f} >= {trigger.threshold:g} over "
                f"{trigger.window} turns ({monitor.backend.name}) with this draft; redirected "
                "before sending, offering "
                + (f"revelation {topic!r}" if topic else "no unused revelation (none left)"),
                values={
                    "value": round(trigger.value, 4),
                    "threshold": trigger.threshold,
                    "window": float(trigger.window),
                    **{k: round(v, 4) for k, v in monitor.last_values.items()},
                },
            )
            for trigger in fired
        ]
        return emergency, events

    async def _observe(self, exchange: Observe) -> Observation:
        self._recent.append(exchange.persona)
        self._revelations.heard(exchange.persona)
        if self._config.interaction.stagnation_detection.enabled:
            monitor = await self._stagnation_monitor()
            await trio.to_thread.run_sync(
                monitor.add, exchange.turn, exchange.persona, exchange.interlocutor
            )
        return Observation()

    async def _stagnation_monitor(self) -> StagnationMonitor:
        if self._stagnation is None:
            # Imported here, not at the top: registering the monitor kind (which validating a
            # config does) must not load numpy and the similarity backends.
            from loom_sim.signals.embedding import load_backend
            from loom_sim.signals.stagnation import StagnationMonitor

            spec = self._config.interaction.stagnation_detection
            backend = await trio.to_thread.run_sync(load_backend, spec.backend.value)
            monitor = StagnationMonitor(spec, backend, last_trigger=self._last_trigger)
            await trio.to_thread.run_sync(monitor.restore, self._resume_from)
            self._stagnation = monitor
        return self._stagnation

    def _intervention(
        self, turn: int, phase_index: int, intensities: dict[str, float]
    ) -> tuple[str, str | None]:
        """The intervention template, filled in; and the revelation it offers, now used."""
        config = self._config
        choice = self._revelations.next_unused(phase_index, intensities)
        if choice is not None:
            self._revelations.mark_used(choice.topic)
        phases = config.trajectory.phases
        fields: dict[str, object] = {
            "name": config.persona.identity.name,
            "current_phase": phases[min(phase_index, len(phases) - 1)].name,
            "turn": turn + 1,  # the turn it is for, counted from 1
            "turns": self._turns if self._turns is not None else "?",
            "next_unused_revelation": f'"{choice.text}"' if choice else FALLBACK,
            **intensities,
        }
        template = config.interaction.stagnation_detection.intervention_template
        used = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        text = template.format(**{k: v for k, v in fields.items() if k in used})
        return text.strip(), choice.topic if choice else None

    def _mark_offered(self, emergency: str) -> None:
        for phase in self._config.trajectory.phases:
            for revelation in phase.revelations:
                if any(text in emergency for _, text in revelation.variants.available()):
                    self._revelations.mark_used(revelation.topic)


def _pattern(trigger: Trigger) -> str:
    return "agreement_loop" if trigger.kind == "stagnation" else "echoing_interlocutor"
