"""A run: N rollouts of one config, concurrently, into one run directory.

``plan_run`` turns a config and options into a :class:`RunPlan` — everything decided and
recorded in a :class:`~loom_sim.store.run_file.RunRecord` before the first model call — and
``plan_resume`` reads one back from ``run.json``; :func:`loom_sim.rollout.runtime.cells.execute`
runs
it. Rollouts are cells (:class:`~loom_sim.rollout.runtime.cells.Cell`, the unit a matrix run also
has)
that ``concurrency`` workers in one nursery take in order; a rollout that fails ends in
``error`` on its own and the others go on.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from loom_sim import __version__
from loom_sim.assembler import Assembler
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.config import LoomConfig, load_config
from loom_sim.config.spec import CURRENT_SCHEMA_VERSION
from loom_sim.core.header import plan_header, redact_argv, redact_url, versions
from loom_sim.core.lock import refuse_if_held
from loom_sim.errors import LoomError
from loom_sim.judging.prompts import RUBRIC_VERSION
from loom_sim.models.base import CallLimiter
from loom_sim.models.cache import ResponseCache
from loom_sim.models.hub import ModelHub
from loom_sim.models.pricing import Price
from loom_sim.models.providers import provider_limits
from loom_sim.models.retry import Faults
from loom_sim.plugins.actors import ACTORS, Responder, adversaries
from loom_sim.resources import find
from loom_sim.rollout.runtime.rollout import Cast, RolloutSpec
from loom_sim.store.artifacts import RolloutFiles, config_hash, new_run_dir, rollout_dir, write_json
from loom_sim.store.jsonl import writing
from loom_sim.store.run_file import (
    FORMAT_VERSION,
    RUN_FILE,
    Budgets,
    PriceRecord,
    RunRecord,
    read_run,
)

DEFAULT_MODEL = "local/smollm2"
DEFAULT_CONCURRENCY = 4


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
    concurrency: int = DEFAULT_CONCURRENCY
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
    # The base URL as given on this command line: it may hold credentials, so it is used
    # for this session and never stored (the record keeps it redacted).
    given_base_url: str | None = None

    @property
    def concurrency(self) -> int:
        return self.record.concurrency

    @property
    def base_url(self) -> str | None:
        return self.given_base_url or self.record.base_url

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
    # A shipped example's name works here as on the command line (find keeps a path as is).
    config_path = find(config_path, "examples", "ported")
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
    check_new(run_dir)
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
        argv=redact_argv(argv),
        versions=versions(),
        config=config_data,
        header=plan_header(
            format_version=FORMAT_VERSION,
            seed=seed,
            argv=argv,
            template_version=TEMPLATE_VERSION,
            rubric_versions={"rubrics": RUBRIC_VERSION},
        ),
    )
    return RunPlan(dir=run_dir, record=record, config=config, given_base_url=options.base_url)


def check_new(run_dir: Path) -> None:
    """Refuse a folder another process is writing (naming it), or one that holds a run."""
    refuse_if_held(run_dir)
    if (run_dir / RUN_FILE).exists():
        raise LoomError(f"{run_dir} already holds a run; continue it with --resume {run_dir}")


def plan_resume(
    run_dir: Path, *, concurrency: int | None = None, base_url: str | None = None
) -> RunPlan:
    record = read_run(run_dir)
    if record.imported_from:
        raise LoomError(f"{run_dir} was imported from another tool; it cannot be resumed")
    if concurrency:
        record.concurrency = concurrency
    missing = [name for name in record.responders if name not in ACTORS]
    if missing:
        raise LoomError(
            f"{run_dir / RUN_FILE}: its responder {missing[0]!r} is not installed here "
            f"({ACTORS.unknown(missing[0])})"
        )
    # The base URL is stored redacted; one that needs credentials in it is given again.
    plan = RunPlan(dir=run_dir, record=record, config=record.loom_config, given_base_url=base_url)
    for index in range(record.rollouts):  # a damaged file stops the resume before it starts
        files = plan.rollout_spec(index).files
        finished = files.transcript()
        if finished is None or finished.status != "done":
            files.turns.read()
    return plan


def reach_note(config: LoomConfig, turns: int) -> str | None:
    """What a run shorter than the config's ``expected_turns`` will not do: phases it never
    reaches, and phases it reaches whose MUST DO is never sent (no full injection falls in
    them). None when it does all of it, or is not shorter."""
    expected = config.trajectory.expected_turns
    if expected is None or turns >= expected or turns > MAX_CHECKED_TURNS:
        return None
    assembler = Assembler(config, turns)
    reached: dict[str, bool] = {}  # phase -> a full injection falls in it
    for turn in range(turns):
        plan = assembler.plan(turn, prompt="injected")
        reached[plan.phase] = reached.get(plan.phase, False) or plan.injection == "full"
    names = [p.name for p in config.trajectory.phases]
    missed = [n for n in names if n not in reached]
    unsent = [n for n in names if n in reached and not reached[n]]
    parts = []
    if missed:
        parts.append(f"{_phases(missed)} will not be reached")
    if unsent:
        parts.append(
            f"{_phases(unsent)} get{'s' if len(unsent) == 1 else ''} no full injection, so "
            "the persona never receives "
            + ("its" if len(unsent) == 1 else "their")
            + " MUST DO (interaction.injection.full_on_phase_change: true sends it)"
        )
    if not parts:
        return None
    return f"{turns} of {expected} turns: " + "; ".join(parts)


MAX_CHECKED_TURNS = 5_000  # planning every turn of a longer run is not worth a note


def _phases(names: list[str]) -> str:
    if len(names) == 1:
        return f"phase {names[0]}"
    return f"phases {', '.join(names[:-1])} and {names[-1]}"


def write_plan(plan: RunPlan) -> None:
    """Write run.json (the run directory made first); a directory that cannot be written is
    said before any model is called."""
    with writing(plan.dir):
        plan.dir.mkdir(parents=True, exist_ok=True)
    write_json(plan.dir / RUN_FILE, plan.record)


def record_faults(plan: RunPlan, faults: Faults) -> None:
    """Add this session's model-call faults to run.json (a disk that refuses is not worth
    failing the run over: the closing summary has said them)."""
    if faults.empty:
        return
    plan.record.add_faults(faults)
    with contextlib.suppress(LoomError):
        # An executor may have added its pass (``executions``) to the file meanwhile.
        plan.record.executions = read_run(plan.dir).executions
        write_json(plan.dir / RUN_FILE, plan.record)


# ─── models ─────────────────────────────────────────────────────────────────


def make_hub(
    plan: RunPlan,
    cache: ResponseCache | None = None,
    limiters: Mapping[str, CallLimiter] | None = None,
) -> ModelHub:
    """The run's model hub, every spec checked (shape, provider, script or file, key) and the
    budget's premise checked: a cost budget needs every model's price. ``limiters`` replace
    the hub's own limits for those providers (a cluster's, shared by every worker)."""
    record = plan.record
    hub = hub_for(
        plan.config,
        plan.base_url,
        record.concurrency,
        record.timeout_s,
        record.prices,
        cache,
        limiters,
    )
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
    cache: ResponseCache | None = None,
    limiters: Mapping[str, CallLimiter] | None = None,
) -> ModelHub:
    """The model hub for a config: its prices (and the run's), context windows and limits;
    ``cache`` serves and stores replies (the caller closes it)."""
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
        cache=cache,
        limiters=limiters,
    )
