"""The monitor: watches the persona while the conversation runs.

Protocol: ``CheckCandidate`` -> ``Verdict`` (on leaving ``act``: every registered monitor's word
on the candidate, :class:`~loom_sim.rollout.monitors.base.Monitors` — findings that reject it
with a re-prompt, or a redirect, so a rejected draft never reaches the interlocutor);
``Observe`` -> ``Observation`` (the committed exchange, told to every monitor: what they found
in it, the revelations the persona's message made with their evidence).

The actor knows no monitor: loom-sim's own (repetition, capitulation, stagnation, revelations)
are registered plug-ins like a package's (:mod:`loom_sim.rollout.monitors.builtin`). It owns
what they share for the rollout (:class:`~loom_sim.rollout.monitors.context.MonitorContext`:
the vectors of the turn in progress, asked from the run's embedding service in one request per
check for every monitor's texts; the judge; the revelations made and offered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom_sim.actors.base import Actor, ActorContext, JudgeLine

from loom_sim.config.spec import LoomConfig
from loom_sim.messages import Body
from loom_sim.plugins.actors import actor
from loom_sim.rollout.messages import CheckCandidate, Observation, Observe, Verdict
from loom_sim.rollout.monitors.base import Monitors
from loom_sim.rollout.monitors.context import MonitorContext
from loom_sim.store.records import TurnRecord

if TYPE_CHECKING:
    from loom_sim.actors.embedder import Embedder


@actor(
    "monitor",
    summary="every registered monitor on every candidate and every committed exchange",
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
        context = MonitorContext(
            config, records=records, turns=turns, embedder=embedder, judge=judge
        )
        self._monitors = Monitors(config, context, records)
        context.hold(self._monitors.lasting())

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
        checked = await self._monitors.check(
            request.turn,
            request.attempt,
            request.text,
            phase_index=request.phase_index,
            intensities=request.intensities,
        )
        if checked.accepted:
            return Verdict(accepted=True)
        return Verdict(
            accepted=False,
            events=checked.events,
            vary=checked.vary,
            redirect=checked.redirect,
            offered=checked.offered,
        )

    async def _observe(self, exchange: Observe) -> Observation:
        observed = await self._monitors.observe(
            exchange.turn, exchange.persona, exchange.interlocutor
        )
        return Observation(revealed=observed.revealed, judge_usage=observed.usage)
