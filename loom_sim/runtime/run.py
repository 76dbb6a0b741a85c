"""A run: N rollouts of one config, concurrently, into one run directory.

``plan_run`` turns a config and options into a :class:`RunPlan` — everything decided and
recorded in a :class:`~loom_sim.store.run_file.RunRecord` before the first model call — and
``plan_resume`` reads one back from ``run.json``; ``execute`` runs it. Every rollout is a task
in one nursery, bounded by ``concurrency``; a rollout that fails ends in ``error`` on its own
and the others go on.
"""

from __future__ import annotations

import platform
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import trio

from loom_sim import __version__
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.config import LoomConfig, load_config
from loom_sim.config.spec import CURRENT_SCHEMA_VERSION
from loom_sim.errors import LoomError
from loom_sim.judging.prompts import RUBRIC_VERSION
from loom_sim.models.hub import ModelHub
from loom_sim.models.pricing import Price
from loom_sim.models.providers import provider_limits
from loom_sim.plugins.actors import ACTORS, Responder, adversaries
from loom_sim.runtime.budget import RunBudget
from loom_sim.runtime.progress import ProgressSink
from loom_sim.runtime.rollout import Cast, ModelSource, Rollout, RolloutSpec
from loom_sim.runtime.startup import rollout_models, run_services
from loom_sim.store.artifacts import RolloutFiles, config_hash, new_run_dir, rollout_dir, write_json
from loom_sim.store.records import Transcript
from loom_sim.store.run_file import RUN_FILE, Budgets, PriceRecord, RunRecord, read_run

DEFAULT_MODEL = "local/smollm2"


@dataclass(frozen=True)
class RunOptions:
    """What the user chose on the command line (None: take the config's, then the default)."""

    turns: int | None = None
    rollouts: int = 1
    seed: int | None = None
    persona_model: str | None = None
    target: str | None = None
    judge_model: str | None = None
    target_system: str | None = None
    base_url: str | None = None
    output: Path | None = None
    results_root: Path = Path("results")
    concurrency: int = 4
    max_cost_usd: float | None = None
    max_runtime_s: float | None = None
    timeout_s: float = 120.0
    adversary: str | None = None  # none | both | an adversary's name (None: the config's)
    adversary_model: str | None = None
    responders: tuple[str, ...] = ()  # registered responders, in rotation (overrides adversary)
    role_models: dict[str, str] = field(default_factory=dict)  # --model ROLE=SPEC
    prices: dict[str, Price] = field(default_factory=dict)  # --price SPEC=IN/OUT


@dataclass
class RunPlan:
    dir: Path
    record: RunRecord  # run.json
    config: LoomConfig  # the record's config, validated once

    @property
    def concurrency(self) -> int:
        return self.record.concurrency

    @property
    def base_url(self) -> str | None:
        return self.record.base_url

    @property
    def timeout_s(self) -> float:
        return self.record.timeout_s

    @property
    def models(self) -> dict[str, str]:
        return self.record.models

    def rollout_spec(self, index: int) -> RolloutSpec:
        record = self.record
        return RolloutSpec(
            index=index,
            config=self.config,
            config_name=record.config_name,
            turns=record.turns,
            seed=record.seed,
            models=record.models,
            interlocutor_system=record.interlocutor_system_prompt,
            files=RolloutFiles(rollout_dir(self.dir, index)),
            cast=Cast(responders=tuple(record.responders)),
            settings=record.settings,
        )


# ─── planning ───────────────────────────────────────────────────────────────


def choose_responders(config: LoomConfig, options: RunOptions) -> dict[str, Responder]:
    """Who answers the persona, in rotation: ``--responder`` names, else ``--adversary``
    (``both``: every adversary), else the config's ``evaluation.adversary.type``, else the
    interlocutor."""
    if options.responders:
        names = list(dict.fromkeys(options.responders))
    else:
        choice = options.adversary or str(config.evaluation.adversary.type)
        if choice == "none":
            names = ["interlocutor"]
        else:
            names = [a.name for a in adversaries()] if choice == "both" else [choice]
    found = {}
    for name in names:
        responder = ACTORS.get(name).responder
        if responder is None:
            raise LoomError(f"{name} is an actor kind but not a responder: it cannot answer")
        found[name] = responder
    return found


def choose_models(
    config: LoomConfig, options: RunOptions, responders: dict[str, Responder]
) -> dict[str, str]:
    """The model of every role the run calls: the flag, else the config, else the default.
    A role without a flag or config key of its own (a third party's responder's) defaults to
    the interlocutor's model: it answers where the model under evaluation would."""
    given = dict(options.role_models)
    models = {
        "persona": options.persona_model
        or given.get("persona")
        or config.models.persona
        or DEFAULT_MODEL,
        "judge": options.judge_model or given.get("judge") or config.models.judge or DEFAULT_MODEL,
    }
    interlocutor = (
        options.target or given.get("interlocutor") or config.models.interlocutor or DEFAULT_MODEL
    )
    for responder in responders.values():
        role = responder.model_role
        if role in models:
            continue
        if role == "interlocutor":
            models[role] = interlocutor
        elif role == "adversary":
            models[role] = (
                options.adversary_model
                or given.get("adversary")
                or config.evaluation.adversary.model
                or models["judge"]
            )
        else:
            models[role] = given.get(role) or interlocutor
    unused = sorted(set(given) - set(models))
    if unused:
        raise LoomError(
            f"--model {unused[0]}=...: no part of this run calls a {unused[0]} model "
            f"(roles: {', '.join(models)})"
        )
    return {role: models[role] for role in ("persona", *sorted(set(models) - {"persona"}))}


def plan_run(
    config_path: str | Path, options: RunOptions, argv: list[str] | None = None
) -> RunPlan:
    config_path = Path(config_path)
    config = load_config(config_path)
    turns = options.turns or config.trajectory.expected_turns
    if turns is None:
        raise LoomError(
            f"{config_path}: this trajectory has no expected_turns; "
            "say how many turns to run (--turns N)"
        )
    if options.rollouts < 1:
        raise LoomError("--rollouts must be at least 1")
    responders = choose_responders(config, options)
    models = choose_models(config, options, responders)
    settings = {
        name: responder.settings(config_path, config)
        for name, responder in responders.items()
        if responder.settings is not None
    }
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    config_data = config.model_dump(mode="json")
    run_dir = options.output or new_run_dir(options.results_root, config_path.stem, config_data)
    if (run_dir / RUN_FILE).exists():
        raise LoomError(f"{run_dir} already holds a run; continue it with --resume {run_dir}")
    record = RunRecord(
        loom_sim_version=__version__,
        schema_version=CURRENT_SCHEMA_VERSION,
        template_version=TEMPLATE_VERSION,
        rubric_version=RUBRIC_VERSION,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        config_path=str(config_path),
        config_name=config_path.name,
        config_sha256=config_hash(config_data),
        seed=seed,
        turns=turns,
        rollouts=options.rollouts,
        concurrency=max(1, options.concurrency),
        models=models,
        interlocutor_system_prompt=options.target_system
        or config.conversation.interlocutor_system_prompt,
        responders=list(responders),
        settings=settings,
        prices={
            spec: PriceRecord(p.input_per_mtok, p.output_per_mtok)
            for spec, p in options.prices.items()
        },
        base_url=redact_url(options.base_url),
        budgets=Budgets(options.max_cost_usd, options.max_runtime_s),
        timeout_s=options.timeout_s,
        argv=[(redact_url(a) or a) if "://" in a else a for a in (argv or [])],
        versions=versions(),
        config=config_data,
    )
    return RunPlan(dir=run_dir, record=record, config=config)


def plan_resume(
    run_dir: Path, *, concurrency: int | None = None, base_url: str | None = None
) -> RunPlan:
    record = read_run(run_dir)
    if record.imported_from:
        raise LoomError(f"{run_dir} was imported from another tool; it cannot be resumed")
    if concurrency:
        record.concurrency = concurrency
    if base_url:  # stored redacted; a server that needs credentials in its URL is given again
        record.base_url = base_url
    missing = [name for name in record.responders if name not in ACTORS]
    if missing:
        raise LoomError(
            f"{run_dir / RUN_FILE}: its responder {missing[0]!r} is not installed here "
            f"({ACTORS.unknown(missing[0])})"
        )
    return RunPlan(dir=run_dir, record=record, config=record.loom_config)


def write_plan(plan: RunPlan) -> None:
    plan.dir.mkdir(parents=True, exist_ok=True)
    write_json(plan.dir / RUN_FILE, plan.record)


# ─── models ─────────────────────────────────────────────────────────────────


def make_hub(plan: RunPlan) -> ModelHub:
    """The run's model hub, every spec checked (shape, provider, script or file, key) and the
    budget's premise checked: a cost budget needs every model's price."""
    record = plan.record
    hub = hub_for(plan.config, record.base_url, record.concurrency, record.timeout_s, record.prices)
    for spec in dict.fromkeys(record.models.values()):
        hub.check(spec)
    unpriced = unknown_prices(hub, record.models)
    if unpriced and record.budgets.max_cost_usd is not None:
        raise LoomError(
            f"--max-cost cannot be kept: {', '.join(unpriced)} has no known price, so its "
            "cost cannot be counted; give it with --price SPEC=IN/OUT (USD per million input "
            "and output tokens) or the config's models.pricing"
        )
    return hub


def unknown_prices(hub: ModelHub, models: dict[str, str]) -> list[str]:
    """The run's model specs whose cost would be recorded as unknown."""
    return [spec for spec in dict.fromkeys(models.values()) if hub.prices.price(spec) is None]


def hub_for(
    config: LoomConfig,
    base_url: str | None,
    concurrency: int,
    timeout_s: float,
    prices: dict[str, PriceRecord] | None = None,
) -> ModelHub:
    """The model hub for a config: its prices (and the run's), context windows and limits."""
    models = config.models
    limits = provider_limits(concurrency)
    limits.update(models.provider_concurrency)
    table = {spec: Price(p.input_per_mtok, p.output_per_mtok) for spec, p in models.pricing.items()}
    table.update({s: Price(p.input_per_mtok, p.output_per_mtok) for s, p in (prices or {}).items()})
    return ModelHub(
        base_url=base_url,
        prices=table,
        context_tokens=dict(models.context_tokens),
        provider_concurrency=limits,
        timeout_s=timeout_s,
    )


def hub_models(hub: ModelHub) -> ModelSource:
    return lambda spec, index, role: hub.client(spec, rollout_index=index, role=role)


# ─── running ────────────────────────────────────────────────────────────────


async def execute(
    plan: RunPlan,
    hub: ModelHub,
    progress: ProgressSink,
    models: ModelSource | None = None,
) -> list[Transcript]:
    """Run every rollout of the plan (skipping finished ones); return their transcripts.
    ``models`` replaces the hub as the source of model clients (tests' fakes)."""
    source = models or hub_models(hub)
    record = plan.record
    budget = RunBudget(record.budgets.max_cost_usd, record.budgets.max_runtime_s)
    limiter = trio.CapacityLimiter(record.concurrency)
    results: dict[int, Transcript] = {}

    async def one(index: int) -> None:
        spec = plan.rollout_spec(index)
        finished = spec.files.transcript()
        if finished is not None and finished.status == "done":
            results[index] = finished
            return
        async with limiter:
            results[index] = await Rollout(spec, source, budget, progress, embedder=shared).run()

    try:
        async with (
            run_services([plan.config], hub, {} if models else preloaded(plan)) as shared,
            trio.open_nursery() as nursery,
        ):
            for index in range(record.rollouts):
                nursery.start_soon(one, index, name=f"rollout_{index:03d}")
    finally:
        with trio.CancelScope(shield=True):
            await hub.aclose()
    return [results[i] for i in sorted(results)]


def preloaded(plan: RunPlan) -> dict[str, str]:
    """The in-process models the run loads at start-up: those its rollouts call."""
    return rollout_models(plan.config, plan.models, plan.record.responders)


def redact_url(url: str | None) -> str | None:
    """Drop credentials and query strings from a URL before it is written anywhere."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def versions() -> dict[str, str]:
    found = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in (
        "pydantic",
        "msgspec",
        "trio",
        "httpx",
        "transitions",
        "jinja2",
        "llama-cpp-python",
    ):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found
