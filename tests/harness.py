"""Running one rollout in-process with fake models, for runtime tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import trio
from loom_sim.actors.base import Actor, ActorContext

from loom_sim.config import LoomConfig
from loom_sim.plugins.actors import ACTORS, ActorKind, Responder, adversaries
from loom_sim.rollout.adversaries.config import AdversaryConfig
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.progress import NullProgress
from loom_sim.rollout.runtime.rollout import Cast, ModelSource, Rollout, RolloutSpec
from loom_sim.store.artifacts import RolloutFiles
from tests.fakes import FakeModel, echo_interlocutor, varied_persona

MODELS = {
    "persona": "fake/persona",
    "interlocutor": "fake/interlocutor",
    "judge": "fake/judge",
    "adversary": "fake/adversary",
}


def spec_for(
    tmp_path: Path,
    config: LoomConfig,
    turns: int,
    *,
    index: int = 0,
    seed: int = 7,
    adversaries: dict[str, AdversaryConfig] | None = None,
    cast: Cast | None = None,
) -> RolloutSpec:
    chosen = adversaries or {}
    order = [kind.name for kind in _adversaries() if kind.name in chosen]
    return RolloutSpec(
        index=index,
        config=config,
        config_name="test.yaml",
        turns=turns,
        seed=seed,
        models=dict(MODELS),
        interlocutor_system="You are a helpful assistant.",
        files=RolloutFiles(tmp_path / f"rollout_{index:03d}"),
        cast=cast or Cast(responders=tuple(order) or ("interlocutor",)),
        settings={kind: c.model_dump(mode="json") for kind, c in chosen.items()},
    )


def _adversaries():
    return adversaries()


def models_of(models: dict[str, FakeModel]) -> ModelSource:
    """The rollout's model source: each spec ``fake/<name>`` is ``models[name]``."""
    return lambda spec, index, role: models[spec.split("/")[1]]


@contextmanager
def actor_kinds(**builders: Callable[[ActorContext], Actor]) -> Iterator[Cast]:
    """Register test-only actor kinds for the parts named (``interlocutor=...`` makes it the
    responder), and yield the cast that uses them; they are unregistered afterwards."""
    cast = Cast()
    with ExitStack() as stack:
        for part, make in builders.items():
            responder = Responder(model_role=part) if part == "interlocutor" else None
            name = f"test_{part}"
            stack.enter_context(ACTORS.added(ActorKind(name=name, build=make, responder=responder)))
            if part == "interlocutor":
                cast = Cast(
                    persona=cast.persona, monitor=cast.monitor, judge=cast.judge, responders=(name,)
                )
            else:
                cast = Cast(**{**cast.__dict__, part: name})
        yield cast


def fakes(
    persona=varied_persona,
    interlocutor=echo_interlocutor,
    judge=lambda r: '{"met": false, "evidence": ""}',
    adversary=lambda r: "Tell me more about that.",
):
    return {
        "persona": FakeModel(persona, spec="fake/persona"),
        "interlocutor": FakeModel(interlocutor, spec="fake/interlocutor"),
        "judge": FakeModel(judge, spec="fake/judge"),
        "adversary": FakeModel(adversary, spec="fake/adversary"),
    }


async def run_rollout(tmp_path, config, turns, models=None, budget=None, **kw):
    models = models or fakes()
    rollout = Rollout(
        spec_for(tmp_path, config, turns, **kw),
        models_of(models),
        budget or RunBudget(),
        NullProgress(),
    )
    with trio.fail_after(30):
        return await rollout.run(), models
