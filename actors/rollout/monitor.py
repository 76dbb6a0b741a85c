"""The monitor: watches the persona while the conversation runs.

Protocol: ``CheckCandidate`` -> ``Verdict`` (on leaving ``act``: the repetition guard, the
capitulation phrases, every registered monitor (``loom_sim.rollout.monitors.base``), and the
stagnation and convergence checks of the candidate as if it were sent — a looping candidate is
rejected with the emergency redirect, with the numbers that caused it, so the loop never
reaches the interlocutor); ``Observe`` -> ``Observation`` (the
committed exchange joins the monitor's windows, and the revelations the persona's message makes
are decided by meaning, with their evidence: ``loom_sim.rollout.monitors.revelations``).

A redirect is checked, not trusted: on the turn that fired and through its cooldown, every
candidate is asked whether it still continues the loop (``StagnationMonitor.recheck``); one
that does is rejected with a stronger redirect (:data:`ESCALATION`, quoting it, with the next
unused revelation), each escalation one level up, and one that goes out of retries anyway is
flagged by the rollout as "sent despite redirect".

Embeddings come from the run's embedding service (``loom_sim.actors.embedder``), batched with
the other rollouts' texts. Each request waits out the service's batching window, so a check
makes one (``_ahead``) for everything it and the observation after it compare, held for the
turn (``monitor_meaning.HeldVectors``): the window's missing texts and the candidate when a
verdict could fire (not before ``min_turn``), its clauses for capitulation by meaning, its
sentences and the variants (held for the rollout) while revelations remain to be made. The
observation asks again only when a sentence comes near a variant; the interlocutor's message is
only *prefetched* for the window (embedded when the service is free). The accepted candidate
keeps the vector it was checked with.
"""

from __future__ import annotations

import string
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

import trio
from loom_sim.actors.base import Actor, ActorContext, JudgeLine
from loom_sim.rollout.actors import monitor_meaning as meaning

from loom_sim.assembler.revelations import FALLBACK, RevelationTracker
from loom_sim.config.spec import EmbeddingBackend as BackendName
from loom_sim.config.spec import LoomConfig, ResistanceLevel
from loom_sim.messages import (
    LOOP_AFTER_REDIRECT,
    LOOP_CHECK,
    Body,
    CheckCandidate,
    MonitorEvent,
    Observation,
    Observe,
    Prefetch,
    Verdict,
)
from loom_sim.plugins.actors import actor
from loom_sim.rollout.monitors.base import Monitors
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.rollout.monitors.concession import exemplars
from loom_sim.rollout.monitors.repetition import RepetitionGuard, vary_instruction
from loom_sim.rollout.monitors.revelations import variants
from loom_sim.store.records import TurnRecord

if TYPE_CHECKING:
    import numpy as np
    from loom_sim.actors.embedder import Embedder

    from loom_sim.signals.stagnation import Repeat, StagnationMonitor, Trigger

STAGNATION_MONITORS = ("stagnation", "convergence")

#: The stronger redirect, when the message written after a redirect still loops: it quotes
#: the message and offers the next unused revelation (a different one each time).
ESCALATION = (
    "[STILL REPEATING (escalation {level}): after being told to stop, you wrote the same thing "
    'again: "{quote}". {name} would not say it again. Do NOT send anything like it. '
    "Say something you have not said in this conversation: {next_unused_revelation}. Or "
    "reject the other person's framing outright, in your own words.]"
)


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
        judge: JudgeLine | None = None,
    ):
        records = records or []
        self._config = config
        # the judge confirms a revelation found by meaning, where the config asks for it
        self._judge = judge if config.interaction.revelation_judge else None
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
        # the registered monitors (loom_sim.plugins.monitors), hearing the completed turns again
        self._registered = Monitors(config, [(r.turn, r.persona, r.interlocutor) for r in records])
        self._revelations = RevelationTracker(config)
        self._made: set[str] = set()  # revelations the persona has made (by the evidence)
        for record in records:
            self._made.update(record.revealed)
            for topic in record.revealed:
                self._revelations.mark_used(topic)
            # A revelation is used the moment the monitor offers it: on the re-prompt that
            # carries the redirect (`vary`), or, with no retry left to ride on, in the next
            # turn's `emergency`, which the turn that fired records as pending. A run killed
            # in between has only the pending one.
            for sent in (record.emergency, record.vary, record.pending_emergency):
                if sent:
                    self._mark_offered(sent)
            for topic in record.offered_by_redirect:
                self._revelations.mark_used(topic)
        last_trigger = max(
            (r.turn for r in records for e in r.monitor_events if e.monitor in STAGNATION_MONITORS),
            default=None,
        )
        # escalations since the last trigger: the next one is one stronger
        self._escalations = sum(
            1
            for r in records
            if last_trigger is not None and r.turn >= last_trigger
            for e in r.monitor_events
            if e.monitor == LOOP_CHECK
        )
        from loom_sim.signals.stagnation import StagnationMonitor  # numpy: only when running

        stagnation = config.interaction.stagnation_detection
        # Its backend is set when the first verdict needs it (the model may still be loading).
        self._stagnation = StagnationMonitor(stagnation, last_trigger=last_trigger)
        self._stagnation.restore([(r.turn, r.persona, r.interlocutor) for r in records])
        # Vectors come from the embedding service when there is one and the model loaded.
        self._embedder = embedder if stagnation.backend is BackendName.EMBEDDING else None
        lasting = [w for _, _, w in variants(config)]
        lasting += exemplars(self._guard.capitulation.phrases)
        self._vectors = meaning.HeldVectors(self._embedder, lasting) if self._embedder else None

    @classmethod
    def from_context(cls, context: ActorContext) -> MonitorActor:
        return cls(
            context.need_config("monitor"),
            records=context.records,
            turns=context.turns,
            embedder=context.embedder,
            judge=context.judge,
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
        findings += await self._registered.check(request.turn, request.attempt, request.text)
        phrases = self._guard.capitulation.phrases  # while the persona is told them
        by_meaning = bool(phrases) and not any(f.monitor == "capitulation" for f in findings)
        if self._vectors is not None and self._embedder is not None:
            await self._vectors(self._ahead(request, phrases if by_meaning else ()))
        if by_meaning and self._vectors is not None and self._embedder is not None:
            findings = await meaning.gave_in(self._vectors, phrases, request.text) + findings
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
        redirect, looped, offered = await self._redirect(request)
        if not findings and redirect is None:
            return Verdict(accepted=True)
        return Verdict(
            accepted=False, events=events + looped, vary=vary, redirect=redirect, offered=offered
        )

    def _ahead(self, request: CheckCandidate, phrases: Sequence[str]) -> list[str]:
        """Every text this check and the observation after it (if the candidate is sent) will
        ask vectors for, so that one request serves them: the candidate's clauses (for
        capitulation by meaning), the stagnation window's missing texts and the candidate (when
        a verdict will be asked), its sentences and the variants (for the revelations)."""
        texts = meaning.capitulation_texts(phrases, request.text) if phrases else []
        monitor = self._stagnation
        if monitor.after_trigger(request.turn) or not monitor.quiet(request.turn):
            texts += [*monitor.missing(), request.text]
        return texts + meaning.revelation_texts(self._config, request.text, self._made)

    async def _redirect(
        self, request: CheckCandidate
    ) -> tuple[str | None, list[MonitorEvent], list[str]]:
        """The emergency redirect, when sending this candidate would continue a loop; after
        one, the escalation, when this candidate still does. With the revelations offered."""
        monitor = self._stagnation
        if monitor.after_trigger(request.turn):
            return await self._recheck(request)
        if monitor.quiet(request.turn):  # nothing can fire: no vector is needed for this check
            return None, [], []
        fired = await self._verdict(monitor, request.turn, request.text)
        if not fired:
            return None, [], []
        self._escalations = 0
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
        return emergency, events, [topic] if topic else []

    async def _recheck(
        self, request: CheckCandidate
    ) -> tuple[str | None, list[MonitorEvent], list[str]]:
        """After a redirect, until the cooldown ends: a candidate that still continues the
        loop is rejected with a stronger redirect and the next unused revelation."""
        monitor = self._stagnation
        repeat = await self._verdict(monitor, request.turn, request.text, recheck=True)
        if repeat is None:
            return None, [], []
        self._escalations += 1
        level = self._escalations
        text, topic = self._intervention(
            request.turn,
            request.phase_index,
            request.intensities,
            template=ESCALATION,
            extra={"level": level, "quote": _quote(request.text)},
        )
        event = MonitorEvent(
            monitor=LOOP_CHECK,
            pattern=LOOP_AFTER_REDIRECT,
            action="escalated",
            attempt=request.attempt,
            detail=f"still loops after the redirect of turn {monitor.last_trigger}: mean "
            f"similarity {repeat.value:.3f} >= {repeat.threshold:g} ({repeat.backend}) to the "
            f"last {repeat.compared} messages; escalation {level}, offering "
            + (f"revelation {topic!r}" if topic else "no unused revelation (none left)"),
            values={
                "value": round(repeat.value, 4),
                "threshold": repeat.threshold,
                "escalation": float(level),
                **{k: round(v, 4) for k, v in repeat.values.items()},
            },
        )
        return text, [event], [topic] if topic else []

    async def _observe(self, exchange: Observe) -> Observation:
        self._recent.append(exchange.persona)
        self._registered.observe(exchange.turn, exchange.persona, exchange.interlocutor)
        vectors = self._vectors if self._embedder is not None else None
        revealed = await meaning.revealed(self._config, vectors, exchange.persona, self._made)
        revealed, usage = await meaning.confirmed(self._config, self._judge, exchange, revealed)
        for evidence in revealed:
            self._made.add(evidence.topic)
            self._revelations.mark_used(evidence.topic)  # never offered again
        if self._config.interaction.stagnation_detection.enabled:
            monitor = self._stagnation
            monitor.add(exchange.turn, exchange.persona, exchange.interlocutor)
            if self._embedder is not None:  # embedded while the next turn talks to its models
                if self._vectors is not None:
                    monitor.supply(self._vectors.held)  # the candidate's, from its check
                lacking = monitor.missing()
                fresh = [t for t in (exchange.persona, exchange.interlocutor) if t in lacking]
                if fresh:
                    self._embedder.tell(Prefetch(texts=fresh))
        if self._vectors is not None:
            self._vectors.end_turn()
        return Observation(revealed=revealed, judge_usage=usage)

    @overload
    async def _verdict(
        self, monitor: StagnationMonitor, turn: int, text: str, *, recheck: Literal[True]
    ) -> Repeat | None: ...

    @overload
    async def _verdict(
        self, monitor: StagnationMonitor, turn: int, text: str, *, recheck: Literal[False] = ...
    ) -> list[Trigger]: ...

    async def _verdict(
        self, monitor: StagnationMonitor, turn: int, text: str, *, recheck: bool = False
    ) -> list[Trigger] | Repeat | None:
        """The stagnation and convergence triggers if ``text`` is sent at ``turn`` (with
        ``recheck``: whether it continues the loop a redirect was given for). With the
        embedding service, the window's missing vectors and the candidate's come in one
        request and the comparison (a few small dot products) runs here; otherwise the
        backend computes in a worker thread (TF-IDF fits on each comparison, ~ms)."""
        # Imported here, not at the top: registering the monitor kind (which validating a
        # config does) must not load numpy and the similarity backends.
        from loom_sim.signals.embedding import TfidfBackend, load_backend

        if self._embedder is not None and self._vectors is not None:
            texts = [*monitor.missing(), text]
            vectors = await self._vectors(texts)
            if vectors is not None:
                if not monitor.embeds:
                    monitor.use(_FromService())
                table = dict(zip(texts, vectors, strict=True))
                monitor.supply(table)
                if recheck:
                    return monitor.recheck(turn, text, table[text])
                return monitor.candidate(turn, text, table[text])
            self._embedder = None  # the model could not be loaded: the fallback from now on
            monitor.use(TfidfBackend())
        if not monitor.has_backend:
            spec = self._config.interaction.stagnation_detection
            monitor.use(await trio.to_thread.run_sync(load_backend, spec.backend.value))
        if recheck:
            return await trio.to_thread.run_sync(monitor.recheck, turn, text)
        return await trio.to_thread.run_sync(monitor.candidate, turn, text)

    def _intervention(
        self,
        turn: int,
        phase_index: int,
        intensities: dict[str, float],
        *,
        template: str | None = None,
        extra: dict[str, object] | None = None,
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
            **(extra or {}),
        }
        template = template or config.interaction.stagnation_detection.intervention_template
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


def _quote(text: str, limit: int = 160) -> str:
    """The looping message as the escalation quotes it: one line, cut at a word."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + " …"


def _pattern(trigger: Trigger) -> str:
    return "agreement_loop" if trigger.kind == "stagnation" else "echoing_interlocutor"
