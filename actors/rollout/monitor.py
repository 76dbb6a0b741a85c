"""The monitor: watches the persona while the conversation runs.

Protocol: ``CheckCandidate`` -> ``Verdict`` (on leaving ``act``: the repetition guard, the
capitulation phrases, and the stagnation and convergence checks of the candidate as if it were
sent — a looping candidate is rejected with the emergency redirect, with the numbers that
caused it, so the loop never reaches the interlocutor); ``Observe`` -> ``Observation`` (the
committed exchange joins the monitor's windows).

Embeddings come from the run's embedding service (``loom_sim.actors.embedder``), batched with
the other rollouts' texts. A verdict waits for vectors only when one could fire: before
``min_turn`` and during the cooldown nothing is embedded for the check, and a committed
exchange is only *prefetched* (embedded when the service is free, so the turn never waits on
it). The accepted candidate keeps the vector it was checked with.
"""

from __future__ import annotations

import string
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio
from loom_sim.actors.base import Actor, ActorContext

from loom_sim.assembler.revelations import FALLBACK, RevelationTracker
from loom_sim.config.spec import EmbeddingBackend as BackendName
from loom_sim.config.spec import LoomConfig, ResistanceLevel
from loom_sim.messages import (
    Body,
    CheckCandidate,
    Embed,
    MonitorEvent,
    Observation,
    Observe,
    Prefetch,
    Verdict,
)
from loom_sim.plugins.actors import actor
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.rollout.monitors.repetition import RepetitionGuard, vary_instruction
from loom_sim.store.records import TurnRecord

if TYPE_CHECKING:
    import numpy as np
    from loom_sim.actors.embedder import Embedder

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
        embedder: Embedder | None = None,
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
        last_trigger = max(
            (r.turn for r in records for e in r.monitor_events if e.monitor in STAGNATION_MONITORS),
            default=None,
        )
        from loom_sim.signals.stagnation import StagnationMonitor  # numpy: only when running

        stagnation = config.interaction.stagnation_detection
        # Its backend is set when the first verdict needs it (the model may still be loading).
        self._stagnation = StagnationMonitor(stagnation, last_trigger=last_trigger)
        self._stagnation.restore([(r.turn, r.persona, r.interlocutor) for r in records])
        # Vectors come from the embedding service when there is one and the model loaded.
        self._embedder = embedder if stagnation.backend is BackendName.EMBEDDING else None

    @classmethod
    def from_context(cls, context: ActorContext) -> MonitorActor:
        return cls(
            context.need_config("monitor"),
            records=context.records,
            turns=context.turns,
            embedder=context.embedder,
        )

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
        monitor = self._stagnation
        if monitor.quiet(request.turn):  # nothing can fire: no vector is needed for this check
            return None, []
        fired = await self._verdict(monitor, request.turn, request.text)
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
            monitor = self._stagnation
            monitor.add(exchange.turn, exchange.persona, exchange.interlocutor)
            if self._embedder is not None:  # embedded while the next turn talks to its models
                lacking = monitor.missing()
                fresh = [t for t in (exchange.persona, exchange.interlocutor) if t in lacking]
                if fresh:
                    self._embedder.tell(Prefetch(texts=fresh))
        return Observation()

    async def _verdict(self, monitor: StagnationMonitor, turn: int, text: str) -> list[Trigger]:
        """The stagnation and convergence triggers if ``text`` is sent at ``turn``. With the
        embedding service, the window's missing vectors and the candidate's come in one
        request and the comparison (a few small dot products) runs here; otherwise the
        backend computes in a worker thread (TF-IDF fits on each comparison, ~ms)."""
        # Imported here, not at the top: registering the monitor kind (which validating a
        # config does) must not load numpy and the similarity backends.
        from loom_sim.signals.embedding import TfidfBackend, load_backend

        if self._embedder is not None:
            texts = [*monitor.missing(), text]
            got = await self._embedder.request(Embed(texts=texts))
            if got.vectors is not None:
                if not monitor.embeds:
                    monitor.use(_FromService())
                table = dict(zip(texts, got.vectors, strict=True))
                monitor.supply(table)
                return monitor.candidate(turn, text, table[text])
            self._embedder = None  # the model could not be loaded: the fallback from now on
            monitor.use(TfidfBackend())
        if not monitor.has_backend:
            spec = self._config.interaction.stagnation_detection
            monitor.use(await trio.to_thread.run_sync(load_backend, spec.backend.value))
        return await trio.to_thread.run_sync(monitor.candidate, turn, text)

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


class _FromService:
    """The similarity backend of a monitor whose vectors the embedding service supplies:
    named for the thresholds; asked to compute, it says what went wrong."""

    name = "embedding"

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("the monitor's vectors come from the embedding service; one is missing")


def _pattern(trigger: Trigger) -> str:
    return "agreement_loop" if trigger.kind == "stagnation" else "echoing_interlocutor"
