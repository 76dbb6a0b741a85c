"""The stagnation monitor: a draft that would continue a loop is redirected before it is sent.

Its settings are ``interaction.stagnation_detection``; the signals are
:class:`loom_sim.signals.stagnation.StagnationMonitor`'s (agreement loops and convergence on
the interlocutor over a window of turns). Each draft is checked *as if sent*: when sending it
would fire a trigger, the persona is re-asked with the emergency redirect (the config's
intervention template, offering the next unused revelation), with the numbers that caused it.

A redirect is checked, not trusted: on the turn that fired and through its cooldown, every
candidate is asked whether it still continues the loop (``StagnationMonitor.recheck``); one
that does is redirected more strongly (:data:`ESCALATION`, quoting it, with the next unused
revelation), each escalation one level up, and one that goes out of retries anyway is
flagged by the rollout as "sent despite redirect".

With the embedding service, the window's missing vectors and the candidate's come in the one
request of every monitor's texts (:meth:`wants`) and the comparison (a few small dot products)
runs here; otherwise the similarity backend computes in a worker thread.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

from loom_sim.assembler.revelations import FALLBACK
from loom_sim.config.spec import LoomConfig, StagnationDetectionSpec
from loom_sim.messages import Prefetch
from loom_sim.plugins.monitors import monitor
from loom_sim.rollout.monitors.base import Draft, Monitor, Redirect
from loom_sim.store.records import TurnRecord
from loom_sim.store.turn_parts import LOOP_AFTER_REDIRECT, LOOP_CHECK, MonitorEvent

if TYPE_CHECKING:
    import numpy as np

    from loom_sim.signals.stagnation import Repeat, Trigger

#: The monitor names its triggers are recorded under.
STAGNATION_MONITORS = ("stagnation", "convergence")

#: The stronger redirect, when the message written after a redirect still loops: it quotes
#: the message and offers the next unused revelation (a different one each time).
ESCALATION = (
    "[STILL REPEATING (escalation {level}): after being told to stop, you wrote the same thing "
    'again: "{quote}". {name} would not say it again. Do NOT send anything like it. '
    "Say something you have not said in this conversation: {next_unused_revelation}. Or "
    "reject the other person's framing outright, in your own words.]"
)


@monitor(
    "stagnation",
    order=30,
    summary="redirects a draft that would continue an agreement loop or echo the other side",
    config_key="interaction.stagnation_detection",
    section=lambda config: config.interaction.stagnation_detection,
)
class LoopMonitor(Monitor):
    def __init__(self, settings: StagnationDetectionSpec, config: LoomConfig) -> None:
        super().__init__(settings, config)
        # numpy and the similarity backends load only when a rollout runs, not when the
        # registry is read (validating a config does that)
        from loom_sim.signals.stagnation import StagnationMonitor

        # Its backend is set when the first verdict needs it (the model may still be loading).
        self.signals = StagnationMonitor(settings)
        self.escalations = 0  # since the last trigger: the next one is one stronger

    def resume(self, records: Sequence[TurnRecord]) -> None:
        last_trigger = max(
            (r.turn for r in records for e in r.monitor_events if e.monitor in STAGNATION_MONITORS),
            default=None,
        )
        self.escalations = sum(
            1
            for r in records
            if last_trigger is not None and r.turn >= last_trigger
            for e in r.monitor_events
            if e.monitor == LOOP_CHECK
        )
        from loom_sim.signals.stagnation import StagnationMonitor

        self.signals = StagnationMonitor(self.settings, last_trigger=last_trigger)
        self.signals.restore([(r.turn, r.persona, r.interlocutor) for r in records])

    def wants(self, draft: Draft) -> list[str]:
        signals = self.signals
        if signals.after_trigger(draft.turn) or not signals.quiet(draft.turn):
            return [*signals.missing(), draft.text]
        return []

    async def redirect(self, draft: Draft) -> Redirect | None:
        """The emergency redirect, when sending this draft would continue a loop; after one,
        the escalation, when this draft still does. With the revelations offered."""
        signals = self.signals
        if signals.after_trigger(draft.turn):
            return await self._recheck(draft)
        if signals.quiet(draft.turn):  # nothing can fire: no vector is needed for this check
            return None
        fired = await self._verdict(draft.turn, draft.text)
        if not fired:
            return None
        self.escalations = 0
        emergency, topic = self._intervention(draft)
        events = [
            MonitorEvent(
                monitor=trigger.kind,
                pattern=_pattern(trigger),
                action="emergency_injection",
                attempt=draft.attempt,
                detail=f"{trigger.kind} {trigger.value:.3f} >= {trigger.threshold:g} over "
                f"{trigger.window} turns ({signals.backend.name}) with this draft; redirected "
                "before sending, offering "
                + (f"revelation {topic!r}" if topic else "no unused revelation (none left)"),
                values={
                    "value": round(trigger.value, 4),
                    "threshold": trigger.threshold,
                    "window": float(trigger.window),
                    **{k: round(v, 4) for k, v in signals.last_values.items()},
                },
            )
            for trigger in fired
        ]
        return Redirect(emergency, events, [topic] if topic else [])

    async def _recheck(self, draft: Draft) -> Redirect | None:
        """After a redirect, until the cooldown ends: a draft that still continues the loop
        is redirected more strongly, with the next unused revelation."""
        signals = self.signals
        repeat = await self._verdict(draft.turn, draft.text, recheck=True)
        if repeat is None:
            return None
        self.escalations += 1
        level = self.escalations
        text, topic = self._intervention(
            draft, template=ESCALATION, extra={"level": level, "quote": _quote(draft.text)}
        )
        event = MonitorEvent(
            monitor=LOOP_CHECK,
            pattern=LOOP_AFTER_REDIRECT,
            action="escalated",
            attempt=draft.attempt,
            detail=f"still loops after the redirect of turn {signals.last_trigger}: "
            + (
                f"loop probability {repeat.value:.3f} >= {repeat.threshold:g} (the learned check)"
                if repeat.backend == "learned"
                else f"mean similarity {repeat.value:.3f} >= {repeat.threshold:g} "
                f"({repeat.backend})"
            )
            + f" against the last {repeat.compared} messages; escalation {level}, offering "
            + (f"revelation {topic!r}" if topic else "no unused revelation (none left)"),
            values={
                "value": round(repeat.value, 4),
                "threshold": repeat.threshold,
                "escalation": float(level),
                **{k: round(v, 4) for k, v in repeat.values.items()},
            },
        )
        return Redirect(text, [event], [topic] if topic else [])

    def observe(self, turn: int, persona: str, interlocutor: str) -> None:
        """The committed exchange joins the windows; its new texts are embedded while the next
        turn talks to its models."""
        signals = self.signals
        signals.add(turn, persona, interlocutor)
        context = self.context
        if context is None or context.embedder is None:
            return
        if context.vectors is not None:
            signals.supply(context.vectors.held)  # the candidate's, from its check
        lacking = signals.missing()
        fresh = [t for t in (persona, interlocutor) if t in lacking]
        if fresh:
            context.embedder.tell(Prefetch(texts=fresh))

    @overload
    async def _verdict(self, turn: int, text: str, *, recheck: Literal[True]) -> Repeat | None: ...

    @overload
    async def _verdict(
        self, turn: int, text: str, *, recheck: Literal[False] = ...
    ) -> list[Trigger]: ...

    async def _verdict(
        self, turn: int, text: str, *, recheck: bool = False
    ) -> list[Trigger] | Repeat | None:
        """The triggers if ``text`` is sent at ``turn`` (with ``recheck``: whether it continues
        the loop a redirect was given for)."""
        import trio

        from loom_sim.signals.embedding import TfidfBackend, load_backend

        signals = self.signals
        context = self.context
        vectors = context.live_vectors if context is not None else None
        if vectors is not None and context is not None:
            texts = [*signals.missing(), text]
            got = await vectors(texts)
            if got is not None:
                if not signals.embeds:
                    signals.use(_FromService())
                table = dict(zip(texts, got, strict=True))
                signals.supply(table)
                if recheck:
                    return signals.recheck(turn, text, table[text])
                return signals.candidate(turn, text, table[text])
            context.embedder_lost()  # the model could not be loaded: the fallback from now on
            signals.use(TfidfBackend())
        if not signals.has_backend:
            backend = self.settings.backend.value
            signals.use(await trio.to_thread.run_sync(load_backend, backend))
        if recheck:
            return await trio.to_thread.run_sync(signals.recheck, turn, text)
        return await trio.to_thread.run_sync(signals.candidate, turn, text)

    def _intervention(
        self,
        draft: Draft,
        *,
        template: str | None = None,
        extra: dict[str, object] | None = None,
    ) -> tuple[str, str | None]:
        """The intervention template, filled in; and the revelation it offers, now used."""
        config = self.config
        tracker = self.context.revelations.tracker if self.context is not None else None
        choice = (
            tracker.next_unused(draft.phase_index, dict(draft.intensities))
            if tracker is not None
            else None
        )
        if choice is not None and tracker is not None:
            tracker.mark_used(choice.topic)
        phases = config.trajectory.phases
        turns = self.context.turns if self.context is not None else None
        fields: dict[str, object] = {
            "name": config.persona.identity.name,
            "current_phase": phases[min(draft.phase_index, len(phases) - 1)].name,
            "turn": draft.turn + 1,  # the turn it is for, counted from 1
            "turns": turns if turns is not None else "?",
            "next_unused_revelation": f'"{choice.text}"' if choice else FALLBACK,
            **draft.intensities,
            **(extra or {}),
        }
        template = template or self.settings.intervention_template
        used = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        text = template.format(**{k: v for k, v in fields.items() if k in used})
        return text.strip(), choice.topic if choice else None


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
