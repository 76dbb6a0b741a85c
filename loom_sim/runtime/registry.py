"""Actors by role, swappable.

The rollout asks the registry for "persona", "interlocutor", "monitor" and "judge"; a test (or a
user) registers another factory for a role — a scripted persona, an echo interlocutor, a judge
with fixed scores — and the machine runs unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from loom_sim.actors.base import Actor
from loom_sim.actors.history import Generation
from loom_sim.adversaries.config import AdversaryConfig, AdversaryKind
from loom_sim.config.spec import LoomConfig
from loom_sim.messages import Heard, Judge, Judgement
from loom_sim.models.base import ModelClient
from loom_sim.seeds import SeedSource
from loom_sim.store.records import TurnRecord


@dataclass(frozen=True)
class ActorContext:
    """What an actor of one rollout may be built from."""

    config: LoomConfig
    rollout_index: int
    seed: int
    models: dict[str, str]
    interlocutor_system: str
    opening: str | None = None
    scaffolding: str = ""
    records: list[TurnRecord] = field(default_factory=list)  # a resumed rollout's turns
    turns: int | None = None
    adversaries: dict[str, AdversaryConfig] = field(default_factory=dict)  # kind -> config
    judge: Callable[[Judge], Awaitable[Judgement]] | None = None  # the rollout's judge actor

    @property
    def seeds(self) -> SeedSource:
        return SeedSource(self.seed, self.rollout_index)

    @property
    def past(self) -> list[Heard]:
        return [Heard(r.turn, r.persona, r.interlocutor) for r in self.records]


ModelLookup = Callable[[str], ModelClient]  # role -> its model client
Factory = Callable[[ActorContext, ModelLookup], Actor]


def _persona(context: ActorContext, model: ModelLookup) -> Actor:
    from loom_sim.actors.persona import PersonaActor

    conversation = context.config.conversation
    return PersonaActor(
        model("persona"),
        Generation(
            conversation.persona_max_tokens,
            conversation.temperature,
            conversation.history_budget_tokens,
        ),
        context.seeds,
        opening=context.opening,
        scaffolding=context.scaffolding,
        past=context.past,
    )


def _interlocutor(context: ActorContext, model: ModelLookup) -> Actor:
    from loom_sim.actors.interlocutor import InterlocutorActor

    conversation = context.config.conversation
    return InterlocutorActor(
        model("interlocutor"),
        context.interlocutor_system,
        Generation(
            conversation.interlocutor_max_tokens,
            conversation.temperature,
            conversation.history_budget_tokens,
        ),
        context.seeds,
        opening=context.opening,
        past=[(h.persona, h.interlocutor) for h in context.past],
    )


def _monitor(context: ActorContext, model: ModelLookup) -> Actor:
    from loom_sim.actors.monitor import MonitorActor

    return MonitorActor(context.config, records=context.records, turns=context.turns)


def _judge(context: ActorContext, model: ModelLookup) -> Actor:
    from loom_sim.actors.judge import JudgeActor

    return JudgeActor(model("judge"), context.seeds)


def _adversary(kind: AdversaryKind) -> Factory:
    def factory(context: ActorContext, model: ModelLookup) -> Actor:
        from loom_sim.actors.adversary import AdversaryActor
        from loom_sim.adversaries import make_adversary

        return AdversaryActor(
            make_adversary(context.adversaries[kind], context.config.persona),
            model("adversary"),
            context.seeds,
            turns=context.turns or len(context.records) + 1,
            judge=context.judge,
            opening=context.opening,
            records=context.records,
        )

    return factory


#: The actor name of each adversary; the rollout asks them in this order, turn by turn.
ADVERSARY_ACTORS: dict[AdversaryKind, str] = {
    AdversaryKind.CONTRADICTION: "contradiction_trap",
    AdversaryKind.HELPFULNESS: "helpfulness_coaxer",
}

DEFAULT_FACTORIES: dict[str, Factory] = {
    "persona": _persona,
    "interlocutor": _interlocutor,
    "monitor": _monitor,
    "judge": _judge,
    **{name: _adversary(kind) for kind, name in ADVERSARY_ACTORS.items()},
}


class ActorRegistry:
    def __init__(
        self,
        models: Callable[[str, int, str], ModelClient],
        factories: dict[str, Factory] | None = None,
    ):
        """``models(spec, rollout_index, role)`` gives a role's client (the ModelHub's)."""
        self._models = models
        self._factories = dict(DEFAULT_FACTORIES)
        self._factories.update(factories or {})

    def register(self, role: str, factory: Factory) -> None:
        self._factories[role] = factory

    def create(self, role: str, context: ActorContext) -> Actor:
        def lookup(model_role: str) -> ModelClient:
            return self._models(context.models[model_role], context.rollout_index, model_role)

        return self._factories[role](context, lookup)
