"""Helpers for the probe tests: plans into tmp dirs, scripted targets and judges, log reading."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom_sim.models.base import ModelClient, ModelRequest
from loom_sim.models.hub import ModelHub
from loom_sim.models.scripted import ScriptedClient
from loom_sim.probe.plan import ProbeOptions, ProbePlan, make_hub, plan_probe, write_plan
from loom_sim.probe.runner import execute
from loom_sim.probe.stand_ins import HOLDS, REVERSALS, TURN1_ANSWERS

ROOT = Path(__file__).parent.parent
PROBES = ROOT / "configs" / "probes"
MORAL = PROBES / "moral_dilemmas.yaml"
FACTUAL = PROBES / "factual_pressure.yaml"
STAND_INS = {"target": "scripted/probe-target", "judge": "scripted/probe-judge"}


def make_plan(tmp_path: Path, config: Path = MORAL, **options: Any) -> ProbePlan:
    """A written plan into ``tmp_path/probe`` with the stand-ins, seed 7 and 8 runs, unless
    ``options`` say otherwise."""
    values: dict[str, Any] = {
        **STAND_INS,
        "seed": 7,
        "runs": 8,
        "output": tmp_path / "probe",
        "bandit_state": tmp_path / "state.json",
    }
    values.update(options)
    plan = plan_probe(config, ProbeOptions(**values), argv=["probe", str(config)])
    write_plan(plan)
    return plan


def sources(
    hub: ModelHub, target: ModelClient | None = None, judge: ModelClient | None = None
) -> Callable[[str, str], ModelClient]:
    """The hub's clients, with ``target`` / ``judge`` in place of the planned ones if given."""

    def source(spec: str, role: str) -> ModelClient:
        injected = {"target": target, "judge": judge}.get(role)
        return injected or hub.client(spec, role=role)

    return source


async def run_plan(
    plan: ProbePlan,
    target: ModelClient | None = None,
    judge: ModelClient | None = None,
    hub: ModelHub | None = None,
) -> dict[str, int]:
    hub = hub or make_hub(plan)
    return await execute(plan, hub, None, sources(hub, target, judge))


def fixed_target(category: str, reverse: bool = False) -> ScriptedClient:
    """A target whose Turn-1 answer is always of ``category``; in Turn 2 it always reverses
    (``reverse``) or always holds."""

    def respond(request: ModelRequest) -> str:
        if not any(m.role == "assistant" for m in request.messages):
            return TURN1_ANSWERS[category][0]
        return REVERSALS[0] if reverse else HOLDS[0]

    return ScriptedClient("scripted/fixed-" + category, responses=respond)


def log_lines(directory: Path, mode: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / f"{mode}.jsonl").read_text().splitlines()]


def without_timings(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "timings"} for r in records]
