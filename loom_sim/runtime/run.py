"""A run: N rollouts of one config, concurrently, into one run directory.

``plan_run`` turns a config and options into a :class:`RunPlan` (and ``plan_resume`` reads one
back from ``run.json``); ``execute`` runs it. Every rollout is a task in one nursery, bounded by
``concurrency``; a rollout that fails ends in ``error`` on its own and the others go on.
"""

from __future__ import annotations

import platform
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import trio

from loom_sim import __version__
from loom_sim.adversaries.config import AdversaryConfig, AdversaryKind, load_adversary
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.config import LoomConfig, load_config
from loom_sim.config.spec import CURRENT_SCHEMA_VERSION
from loom_sim.errors import LoomError
from loom_sim.judging.prompts import RUBRIC_VERSION
from loom_sim.models.hub import DEFAULT_PROVIDER_CONCURRENCY, ModelHub
from loom_sim.runtime.budget import RunBudget
from loom_sim.runtime.progress import ProgressSink
from loom_sim.runtime.registry import ActorRegistry
from loom_sim.runtime.rollout import Rollout, RolloutSpec
from loom_sim.store.artifacts import (
    RolloutFiles,
    config_hash,
    new_run_dir,
    read_run_file,
    rollout_dir,
    write_json,
)
from loom_sim.store.records import Transcript

DEFAULT_MODEL = "local/smollm2"
ROLES = ("persona", "interlocutor", "judge")
#: The shipped adversary configs (the project's configs/adversaries, beside the package).
ADVERSARY_DIR = Path(__file__).resolve().parents[2] / "configs" / "adversaries"


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
    adversary: str | None = None  # none | contradiction | helpfulness | both (None: config's)
    adversary_model: str | None = None


@dataclass
class RunPlan:
    dir: Path
    config: LoomConfig
    config_name: str
    seed: int
    turns: int
    rollouts: int
    models: dict[str, str]
    interlocutor_system: str
    concurrency: int
    base_url: str | None = None
    max_cost_usd: float | None = None
    max_runtime_s: float | None = None
    timeout_s: float = 120.0
    adversaries: dict[str, AdversaryConfig] = field(default_factory=dict)  # kind -> config
    record: dict[str, Any] = field(default_factory=dict)  # run.json as written

    def rollout_spec(self, index: int) -> RolloutSpec:
        return RolloutSpec(
            index=index,
            config=self.config,
            config_name=self.config_name,
            turns=self.turns,
            seed=self.seed,
            models=self.models,
            interlocutor_system=self.interlocutor_system,
            files=RolloutFiles(rollout_dir(self.dir, index)),
            adversaries=self.adversaries,
        )


def plan_run(
    config_path: str | Path, options: RunOptions, argv: list[str] | None = None
) -> RunPlan:
    config_path = Path(config_path)
    config = load_config(config_path)
    trajectory = config.trajectory
    turns = options.turns or trajectory.expected_turns
    if turns is None:
        raise LoomError(
            f"{config_path}: this trajectory has no expected_turns; "
            "say how many turns to run (--turns N)"
        )
    if options.rollouts < 1:
        raise LoomError("--rollouts must be at least 1")
    models = {
        "persona": options.persona_model or config.models.persona or DEFAULT_MODEL,
        "interlocutor": options.target or config.models.interlocutor or DEFAULT_MODEL,
        "judge": options.judge_model or config.models.judge or DEFAULT_MODEL,
    }
    adversaries = load_adversaries(config_path, config, options.adversary)
    if adversaries:  # the adversaries answer the persona; no interlocutor model is called
        adversary = config.evaluation.adversary
        models = {
            "persona": models["persona"],
            "adversary": options.adversary_model or adversary.model or models["judge"],
            "judge": models["judge"],
        }
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    config_data = config.model_dump(mode="json")
    run_dir = options.output or new_run_dir(options.results_root, config_path.stem, config_data)
    if (run_dir / "run.json").exists():
        raise LoomError(f"{run_dir} already holds a run; continue it with --resume {run_dir}")
    plan = RunPlan(
        dir=run_dir,
        config=config,
        config_name=config_path.name,
        seed=seed,
        turns=turns,
        rollouts=options.rollouts,
        models=models,
        interlocutor_system=options.target_system or config.conversation.interlocutor_system_prompt,
        concurrency=max(1, options.concurrency),
        base_url=options.base_url,
        max_cost_usd=options.max_cost_usd,
        max_runtime_s=options.max_runtime_s,
        timeout_s=options.timeout_s,
        adversaries=adversaries,
    )
    plan.record = {
        "loom_sim_version": __version__,
        "schema_version": CURRENT_SCHEMA_VERSION,
        "template_version": TEMPLATE_VERSION,
        "rubric_version": RUBRIC_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config_path": str(config_path),
        "config_name": config_path.name,
        "config_sha256": config_hash(config_data),
        "seed": seed,
        "turns": turns,
        "rollouts": options.rollouts,
        "concurrency": plan.concurrency,
        "models": models,
        "interlocutor_system_prompt": plan.interlocutor_system,
        "adversaries": {kind: a.model_dump(mode="json") for kind, a in adversaries.items()},
        "base_url": redact_url(options.base_url),
        "budgets": {"max_cost_usd": options.max_cost_usd, "max_runtime_s": options.max_runtime_s},
        "timeout_s": options.timeout_s,
        "argv": [redact_url(a) if "://" in a else a for a in (argv or [])],
        "versions": versions(),
        "config": config_data,
    }
    return plan


def plan_resume(
    run_dir: Path, *, concurrency: int | None = None, base_url: str | None = None
) -> RunPlan:
    record = read_run_file(run_dir)
    try:
        config = LoomConfig.model_validate(record["config"])
        plan = RunPlan(
            dir=run_dir,
            config=config,
            config_name=record["config_name"],
            seed=int(record["seed"]),
            turns=int(record["turns"]),
            rollouts=int(record["rollouts"]),
            models=dict(record["models"]),
            interlocutor_system=record["interlocutor_system_prompt"],
            concurrency=concurrency or int(record.get("concurrency", 4)),
            # The URL is stored redacted; a server that needs credentials in it is given again.
            base_url=base_url or record.get("base_url"),
            max_cost_usd=record.get("budgets", {}).get("max_cost_usd"),
            max_runtime_s=record.get("budgets", {}).get("max_runtime_s"),
            timeout_s=float(record.get("timeout_s", 120.0)),
            adversaries={
                kind: AdversaryConfig.model_validate(data)
                for kind, data in record.get("adversaries", {}).items()
            },
            record=record,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise LoomError(
            f"{run_dir / 'run.json'}: not a run file this loom-sim can resume ({err})"
        ) from None
    return plan


def load_adversaries(
    config_path: Path, config: LoomConfig, choice: str | None
) -> dict[str, AdversaryConfig]:
    """The adversary configs a run uses (kind -> config): ``choice`` (the command line's) or
    the config's ``evaluation.adversary.type``; ``both`` is the trap and the coaxer."""
    spec = config.evaluation.adversary
    choice = choice or spec.type.value
    if choice == "none":
        return {}
    kinds = list(AdversaryKind) if choice == "both" else [AdversaryKind(choice)]
    folder = config_path.parent / spec.config_dir if spec.config_dir else ADVERSARY_DIR
    found = {}
    for kind in kinds:
        path = folder / f"{kind.value}.yaml"
        if not path.is_file():
            where = "evaluation.adversary.config_dir" if spec.config_dir else "the default"
            raise LoomError(
                f"{path}: no {kind.value} adversary config there ({where}); "
                "copy one from loom-sim's configs/adversaries"
            )
        found[kind.value] = load_adversary(path, kind)
    return found


def write_plan(plan: RunPlan) -> None:
    plan.dir.mkdir(parents=True, exist_ok=True)
    write_json(plan.dir / "run.json", plan.record)


def make_hub(plan: RunPlan) -> ModelHub:
    hub = hub_for(plan.config, plan.base_url, plan.concurrency, plan.timeout_s)
    for spec in dict.fromkeys(plan.models.values()):
        hub.check(spec)  # a missing key or a bad spec is reported before any call
    return hub


def hub_for(
    config: LoomConfig, base_url: str | None, concurrency: int, timeout_s: float
) -> ModelHub:
    """The model hub for a config: its prices, context windows and provider limits."""
    from loom_sim.models.pricing import Price

    models = config.models
    # The user asked for `concurrency` rollouts at once; each has one call in flight at a time,
    # so a provider limit below that would quietly serialise what they asked to run in parallel.
    limits = {
        provider: max(DEFAULT_PROVIDER_CONCURRENCY[provider], concurrency)
        for provider in ("openai", "anthropic", "scripted")
    }
    limits.update(models.provider_concurrency)
    return ModelHub(
        base_url=base_url,
        prices={
            spec: Price(p.input_per_mtok, p.output_per_mtok) for spec, p in models.pricing.items()
        },
        context_tokens=dict(models.context_tokens),
        provider_concurrency=limits,
        timeout_s=timeout_s,
    )


async def execute(
    plan: RunPlan,
    hub: ModelHub,
    progress: ProgressSink,
    registry: ActorRegistry | None = None,
) -> list[Transcript]:
    """Run every rollout of the plan (skipping finished ones); return their transcripts."""
    registry = registry or ActorRegistry(
        lambda spec, index, role: hub.client(spec, rollout_index=index, role=role)
    )
    budget = RunBudget(plan.max_cost_usd, plan.max_runtime_s)
    limiter = trio.CapacityLimiter(plan.concurrency)
    results: dict[int, Transcript] = {}

    async def one(index: int) -> None:
        spec = plan.rollout_spec(index)
        finished = spec.files.transcript()
        if finished is not None and finished.status == "done":
            results[index] = finished
            return
        async with limiter:
            results[index] = await Rollout(spec, registry, budget, progress).run()

    try:
        async with trio.open_nursery() as nursery:
            for index in range(plan.rollouts):
                nursery.start_soon(one, index, name=f"rollout_{index:03d}")
    finally:
        with trio.CancelScope(shield=True):
            await hub.aclose()
    return [results[i] for i in sorted(results)]


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
