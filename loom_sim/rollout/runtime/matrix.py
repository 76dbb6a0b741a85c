"""A matrix run: every (config × target × rollout) cell, concurrently, in one run directory.

Each (config, target) *arm* is planned exactly as a single run is (:func:`plan_run`, with the
target as its interlocutor and the matrix's seed), so each arm's folder is a complete single
run that every other command reads as it is. The matrix adds what the arms share: one
``run.json`` naming them (:class:`~loom_sim.store.matrix_file.MatrixRecord`), one model hub
(one limit per provider, one embedded model in memory, one response cache), one budget and
one bound on the cells running at once. Cells run in the matrix's order (rollout-major), so a
budget that stops the run early leaves every arm with a similar number of rollouts.

Resuming reads the matrix's ``run.json`` and each arm's, and runs every cell not yet done: a
cell is resumed exactly as a single run's rollout is, from its ``turns.jsonl``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from loom_sim import __version__
from loom_sim.config import load_config
from loom_sim.core.header import plan_header, redact_argv, versions
from loom_sim.errors import LoomError
from loom_sim.models.cache import ResponseCache
from loom_sim.models.hub import ModelHub
from loom_sim.models.pricing import Price
from loom_sim.models.providers import provider_limits
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.cells import Cell, run_cells
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.runtime.rollout import ModelSource
from loom_sim.rollout.runtime.run import (
    RunOptions,
    RunPlan,
    check_new,
    make_hub,
    plan_resume,
    plan_run,
    write_plan,
)
from loom_sim.store.artifacts import new_run_dir, write_json
from loom_sim.store.matrix_file import MatrixArm, MatrixRecord, arm_key, read_matrix
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import FORMAT_VERSION as MATRIX_FORMAT_VERSION
from loom_sim.store.run_file import RUN_FILE, Budgets

__all__ = [
    "MatrixPlan",
    "execute_matrix",
    "make_matrix_hub",
    "matrix_cells",
    "plan_matrix",
    "plan_matrix_resume",
    "write_matrix_plan",
]


@dataclass
class MatrixPlan:
    dir: Path
    record: MatrixRecord
    arms: list[RunPlan]  # in the record's order of arms

    def arm_plan(self, key: str) -> RunPlan:
        return self.arms[[a.key for a in self.record.arms].index(key)]


def plan_matrix(
    config_paths: list[Path],
    targets: list[str | None],
    options: RunOptions,
    argv: list[str] | None = None,
    *,
    name: str | None = None,
    suite: Path | None = None,
) -> MatrixPlan:
    """Plan every arm of configs × targets (a target of None: the config's own interlocutor,
    else the default). Nothing is written: :func:`write_matrix_plan` does that."""
    if not config_paths:
        raise LoomError("a matrix run needs at least one config")
    if options.rollouts < 1:
        raise LoomError("--rollouts must be at least 1")
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    stem = name or (config_paths[0].stem if len(config_paths) == 1 else "matrix")
    configs = [load_config(path) for path in config_paths]  # every config's errors, first
    run_dir = options.output or new_run_dir(
        options.results_root,
        stem,
        {"configs": [c.model_dump(mode="json") for c in configs], "targets": targets},
    )
    check_new(run_dir)
    taken: set[str] = set()
    arms: list[MatrixArm] = []
    plans: list[RunPlan] = []
    for path in config_paths:
        for target in dict.fromkeys(targets):
            arm_options = replace(options, seed=seed, target=target, output=run_dir)
            plan = plan_run(path, arm_options, argv)
            resolved = plan.record.models.get("interlocutor")
            if resolved is None:
                raise LoomError(
                    f"{path}: its responders ({', '.join(plan.record.responders)}) do not call "
                    "the model under evaluation, so a matrix over targets has nothing to vary; "
                    "run it without an adversary (--adversary none)"
                )
            key = arm_key(path.stem, resolved, taken)
            plan.dir = run_dir / key
            plans.append(plan)
            arms.append(MatrixArm(key=key, config=plan.record.config_name, target=resolved))
    record = MatrixRecord(
        loom_sim_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=seed,
        rollouts=options.rollouts,
        concurrency=max(1, options.concurrency),
        configs=list(dict.fromkeys(p.record.config_name for p in plans)),
        config_paths=[str(p) for p in config_paths],
        targets=list(dict.fromkeys(a.target for a in arms)),
        arms=arms,
        budgets=Budgets(options.max_cost_usd, options.max_runtime_s),
        suite=str(suite) if suite else None,
        argv=redact_argv(argv),
        versions=versions(),
        header=plan_header(format_version=MATRIX_FORMAT_VERSION, seed=seed, argv=argv),
    )
    return MatrixPlan(dir=run_dir, record=record, arms=plans)


def write_matrix_plan(plan: MatrixPlan) -> None:
    """Every arm's run.json, then the matrix's: a folder with the matrix's run.json has all of
    its arms."""
    for arm in plan.arms:
        write_plan(arm)
    write_json(plan.dir / RUN_FILE, plan.record)


def plan_matrix_resume(
    run_dir: Path, *, concurrency: int | None = None, base_url: str | None = None
) -> MatrixPlan:
    record = read_matrix(run_dir)
    if concurrency:
        record.concurrency = concurrency
    arms = []
    for arm in record.arms:
        if not (run_dir / arm.key / RUN_FILE).is_file():
            raise LoomError(
                f"{run_dir / arm.key}: this arm of the matrix has no {RUN_FILE}; "
                "the matrix cannot be resumed"
            )
        arms.append(plan_resume(run_dir / arm.key, concurrency=concurrency, base_url=base_url))
    return MatrixPlan(dir=run_dir, record=record, arms=arms)


def matrix_cells(plan: MatrixPlan) -> list[Cell]:
    """The matrix's cells in its order (:meth:`MatrixRecord.cells`), each with its arm's plan;
    a shard's (``--shard k/N``) only its own."""
    shard = plan.record.shard
    return [
        Cell(plan.arm_plan(ref.arm), ref.rollout, ref.id, ref.position)
        for ref in plan.record.cells()
        if shard is None or shard.owns(ref.position)
    ]


def make_matrix_hub(plan: MatrixPlan, cache: ResponseCache | None = None) -> ModelHub:
    """One hub for every arm: each arm's models checked as a single run's are (keys, files,
    the premise of a cost budget), and the configs' prices and context windows merged."""
    for arm in plan.arms:
        make_hub(arm)  # checks only; its clients are never made
    first = plan.arms[0].record
    prices: dict[str, Price] = {}
    context: dict[str, int] = {}
    limits = provider_limits(plan.record.concurrency)
    for arm in plan.arms:
        models = arm.config.models
        for spec, p in models.pricing.items():
            prices.setdefault(spec, Price(p.input_per_mtok, p.output_per_mtok))
        for spec, recorded in arm.record.prices.items():
            prices[spec] = Price(recorded.input_per_mtok, recorded.output_per_mtok)
        for spec, tokens in models.context_tokens.items():
            context.setdefault(spec, tokens)
        for provider, limit in models.provider_concurrency.items():
            limits[provider] = min(limits.get(provider, limit), limit)
    return ModelHub(
        base_url=first.base_url,
        prices=prices,
        context_tokens=context,
        provider_concurrency=limits,
        timeout_s=first.timeout_s,
        cache=cache,
    )


async def execute_matrix(
    plan: MatrixPlan,
    hub: ModelHub,
    progress: ProgressSink,
    models: ModelSource | None = None,
) -> list[tuple[Cell, Transcript]]:
    """Run every cell not yet done, within the matrix's concurrency and budgets; each cell
    with its transcript, in the matrix's order."""
    budgets = plan.record.budgets
    budget = RunBudget(budgets.max_cost_usd, budgets.max_runtime_s)
    cells = matrix_cells(plan)
    transcripts = await run_cells(
        cells, hub, progress, budget, plan.record.concurrency, models=models
    )
    return list(zip(cells, transcripts, strict=True))
