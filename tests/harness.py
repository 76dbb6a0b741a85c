"""Running one rollout in-process with fake models, for runtime tests."""

from __future__ import annotations

from pathlib import Path

import trio

from loom_sim.adversaries.config import AdversaryConfig
from loom_sim.config import LoomConfig
from loom_sim.runtime.budget import RunBudget
from loom_sim.runtime.progress import NullProgress
from loom_sim.runtime.registry import ActorRegistry
from loom_sim.runtime.rollout import Rollout, RolloutSpec
from loom_sim.store.artifacts import RolloutFiles
from tests.fakes import FakeModel, echo_interlocutor, varied_persona


def spec_for(
    tmp_path: Path,
    config: LoomConfig,
    turns: int,
    *,
    index: int = 0,
    seed: int = 7,
    adversaries: dict[str, AdversaryConfig] | None = None,
) -> RolloutSpec:
    return RolloutSpec(
        index=index,
        config=config,
        config_name="test.yaml",
        turns=turns,
        seed=seed,
        models={
            "persona": "fake/persona",
            "interlocutor": "fake/interlocutor",
            "judge": "fake/judge",
            "adversary": "fake/adversary",
        },
        interlocutor_system="You are a helpful assistant.",
        files=RolloutFiles(tmp_path / f"rollout_{index:03d}"),
        adversaries=adversaries or {},
    )


def registry_for(models: dict[str, FakeModel], **factories) -> ActorRegistry:
    return ActorRegistry(lambda spec, index, role: models[spec.split("/")[1]], factories)


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
        registry_for(models),
        budget or RunBudget(),
        NullProgress(),
    )
    with trio.fail_after(30):
        return await rollout.run(), models
