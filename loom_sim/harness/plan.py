"""Planning a harness run: which sessions, against what, with which models, where.

``harness.json`` records the plan — the pack as validated, the scenarios, repeats, seed,
models by role, the target chosen, the command line, versions — written once, atomically. A
resumed run reads only it and the bundles: it never re-reads the pack file, and every
session's input files were copied into its bundle when the run was planned.
"""

from __future__ import annotations

import hashlib
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from loom_sim import __version__
from loom_sim.core.header import PlanHeader, plan_header, redact_argv, redact_url
from loom_sim.core.lock import LOCK_FILE
from loom_sim.core.records import RecordFormat
from loom_sim.errors import LoomError
from loom_sim.harness.actors.evaluator import RUBRIC_VERSION
from loom_sim.harness.actors.reflector import PROMPT_VERSION as REFLECTOR_VERSION
from loom_sim.harness.actors.simulated_user import PROMPT_VERSION as USER_VERSION
from loom_sim.harness.bundle import Bundle
from loom_sim.harness.packs import ROLES, LoadedPack, Pack, Persona, Policy, Scenario
from loom_sim.harness.packs.spec import Ability
from loom_sim.harness.records import INPUTS_DIR, SESSION_FILE, TARGET_DIR
from loom_sim.harness.session_file import read_session
from loom_sim.harness.targets import AdapterContext, target_from_option
from loom_sim.plugins.adapters import TargetSettings
from loom_sim.redaction import redact
from loom_sim.seeds import SeedSource
from loom_sim.store.artifacts import unique_dir, write_json

HARNESS_FILE = "harness.json"
FORMAT_VERSION = 1
DEFAULT_MODEL = "local/smollm2"


class SessionEntry(msgspec.Struct, frozen=True):
    name: str  # <scenario>-<n>, the bundle's folder
    scenario: str
    repeat: int  # 1..k
    index: int  # 0.. across the run: seeds derive from it


class HarnessRecord(msgspec.Struct, kw_only=True):
    format_version: int = FORMAT_VERSION
    loom_sim_version: str
    created_at: str
    pack_name: str
    pack_path: str
    pack_sha256: str
    pack: dict  # as validated
    seed: int
    repeat: int
    models: dict[str, str]  # role -> spec
    target: str | None  # --target, redacted; None: each scenario's own
    concurrency: int = 1
    timeout_s: float = 120.0
    argv: list[str] = msgspec.field(default_factory=list)  # redacted
    sessions: list[SessionEntry]
    header: PlanHeader | None = None  # the plan header every system's record carries
    base_url: str | None = None  # --base-url, redacted (no credentials, no query)
    # --target held credentials, which were not stored: a resume is given it again.
    target_secret: bool = False


HARNESS_FORMAT: RecordFormat[HarnessRecord] = RecordFormat(
    HarnessRecord, noun="harness file", version=FORMAT_VERSION
)


@dataclass(frozen=True)
class SessionSpec:
    """Everything one session is run from."""

    index: int
    name: str
    scenario: Scenario
    persona_id: str
    persona: Persona
    policy: Policy
    abilities: list[Ability]  # what the target offers (empty: it offers none)
    target_name: str
    target: TargetSettings
    models: dict[str, str]
    seed: int  # the run's
    repeat: int
    bundle: Bundle
    inputs: list[Path] = field(default_factory=list)

    @property
    def input_names(self) -> list[str]:
        return [p.name for p in self.inputs]

    @property
    def session_seed(self) -> int:
        return SeedSource(self.seed, self.index).rollout_seed

    def _placeholders(self) -> AdapterContext:
        return AdapterContext(
            workdir=self.bundle.path(TARGET_DIR),
            bundle=self.bundle.dir,
            inputs=self.inputs,
            seed=self.session_seed,
            model=lambda spec: None,  # type: ignore[arg-type,return-value]
        )

    def fill(self, text: str) -> str:
        return self._placeholders().fill(text)

    def file(self, text: str) -> str:
        """A file setting of the target (events, artifacts) as the target actor reads it."""
        return self._placeholders().file(text)


@dataclass
class HarnessPlan:
    dir: Path
    record: HarnessRecord
    pack: Pack
    sessions: list[SessionSpec]

    @property
    def concurrency(self) -> int:
        return self.record.concurrency


@dataclass(frozen=True)
class HarnessOptions:
    scenarios: tuple[str, ...] = ()
    target: str | None = None
    repeat: int = 1
    seed: int | None = None
    models: dict[str, str] = field(default_factory=dict)
    output: Path | None = None
    concurrency: int = 1
    timeout_s: float = 120.0
    max_turns: int | None = None  # caps every scenario's budget (a quick look)
    base_url: str | None = None  # as given (harness.json keeps it redacted)


def _target_of(pack: Pack, scenario: Scenario, option: str | None) -> tuple[str, TargetSettings]:
    if option is not None:
        return target_from_option(option, pack.targets)
    name = scenario.target or pack.defaults.target
    if name is None:
        raise LoomError(
            f"scenario {scenario.id} names no target and the pack has no defaults.target; "
            "give --target NAME or KIND:ADDRESS"
        )
    return name, pack.targets[name]


def sessions_of(plan_dir: Path, record: HarnessRecord, pack: Pack) -> list[SessionSpec]:
    specs = []
    for entry in record.sessions:
        scenario = pack.scenario(entry.scenario)
        target_name, target = _target_of(pack, scenario, record.target)
        bundle = Bundle(plan_dir / entry.name)
        inputs = sorted((bundle.path(INPUTS_DIR)).glob("*")) if scenario.inputs else []
        order = {Path(p).name: i for i, p in enumerate(scenario.inputs)}
        inputs.sort(key=lambda p: order.get(p.name, len(order)))
        specs.append(
            SessionSpec(
                index=entry.index,
                name=entry.name,
                scenario=scenario,
                persona_id=scenario.persona,
                persona=pack.personas[scenario.persona],
                policy=scenario.policy or pack.defaults.policy,
                abilities=list(pack.abilities) if target.offers_abilities else [],
                target_name=redact(target_name),  # a name for records: no credentials
                target=target,
                models=record.models,
                seed=record.seed,
                repeat=entry.repeat,
                bundle=bundle,
                inputs=inputs,
            )
        )
    return specs


def plan_run(
    loaded: LoadedPack,
    options: HarnessOptions,
    argv: list[str],
    check: Callable[[str], object] | None = None,
    claim: Callable[[Path], object] | None = None,
    priced: Callable[[str], bool] | None = None,
) -> HarnessPlan:
    """Plan a run and write its folder; ``check`` validates every model spec first (the hub's
    :meth:`~loom_sim.models.hub.ModelHub.check`), so a missing key is reported before anything
    is written; ``claim`` takes the folder's lock (:func:`loom_sim.core.lock.hold`) before it
    is checked and written, so two runs started at once on one folder do not both write it."""
    pack = loaded.pack
    if options.max_turns is not None:
        pack = _capped(pack, options.max_turns)
    scenarios = loaded.scenarios(options.scenarios)
    unknown = sorted(set(options.models) - set(ROLES))
    if unknown:
        raise LoomError(f"--model {unknown[0]}=...: unknown role; roles: {', '.join(ROLES)}")
    models = {role: DEFAULT_MODEL for role in ROLES} | pack.defaults.models | options.models
    for scenario in scenarios:
        _, target = _target_of(pack, scenario, options.target)  # every target resolves
        if check is not None and target.adapter == "model":
            check(getattr(target, "spec", ""))
    if check is not None:
        for spec in models.values():
            check(spec)
    if priced is not None:
        check_cost_caps(pack, scenarios, models, options.target, priced)
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    raw = loaded.path.read_bytes()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    digest = hashlib.sha256(raw).hexdigest()
    folder = options.output or unique_dir(
        Path("results") / f"harness-{loaded.name}-{digest[:8]}-{stamp}"
    )
    folder = folder.resolve()  # the target runs in its own folder: every path is absolute
    if claim is not None:
        claim(folder)
    if folder.exists() and any(p.name != LOCK_FILE for p in folder.iterdir()):
        raise LoomError(f"{folder} is not empty; choose another --output, or --resume it")
    entries = [
        SessionEntry(f"{s.id}-{k}", s.id, k, 0)
        for s in scenarios
        for k in range(1, options.repeat + 1)
    ]
    entries = [msgspec.structs.replace(e, index=i) for i, e in enumerate(entries)]
    record = HarnessRecord(
        loom_sim_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        pack_name=loaded.name,
        pack_path=str(loaded.path),
        pack_sha256=digest,
        pack=pack.model_dump(mode="json"),
        seed=seed,
        repeat=options.repeat,
        models=models,
        target=redact(options.target) if options.target is not None else None,
        target_secret=options.target is not None and redact(options.target) != options.target,
        concurrency=options.concurrency,
        timeout_s=options.timeout_s,
        argv=redact_argv(argv),
        sessions=entries,
        header=plan_header(
            format_version=FORMAT_VERSION,
            seed=seed,
            argv=argv,
            template_version=f"user {USER_VERSION}, reflector {REFLECTOR_VERSION}",
            rubric_versions={"evaluator": RUBRIC_VERSION},
        ),
        base_url=redact_url(options.base_url),
    )
    folder.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        scenario = pack.scenario(entry.scenario)
        inputs = folder / entry.name / INPUTS_DIR
        inputs.mkdir(parents=True, exist_ok=True)
        for item in scenario.inputs:
            shutil.copyfile(loaded.input_path(item), inputs / Path(item).name)
    write_json(folder / HARNESS_FILE, record)
    # The file keeps the target redacted; the run itself needs it as given.
    record = msgspec.structs.replace(record, target=options.target)
    return HarnessPlan(folder, record, pack, sessions_of(folder, record, pack))


def check_cost_caps(
    pack: Pack,
    scenarios: list[Scenario],
    models: dict[str, str],
    target_option: str | None,
    priced: Callable[[str], bool],
) -> None:
    """Refuse a ``max_cost_usd`` that could not be kept: a model it would count has no known
    price, so its spending would be unknown and the cap would silently never stop anything."""
    for scenario in scenarios:
        if scenario.budget.max_cost_usd is None:
            continue
        specs = list(models.values())
        _, target = _target_of(pack, scenario, target_option)
        spec = getattr(target, "spec", None)  # a model target's model
        if target.adapter == "model" and isinstance(spec, str) and spec:
            specs.append(spec)
        unpriced = [spec for spec in dict.fromkeys(specs) if not priced(spec)]
        if unpriced:
            raise LoomError(
                f"scenario {scenario.id}: budget.max_cost_usd cannot be kept: "
                f"{', '.join(unpriced)} has no known price, so its cost cannot be counted; "
                "use a model with a known price, or leave max_cost_usd out"
            )


def _capped(pack: Pack, max_turns: int) -> Pack:
    scenarios = [
        s.model_copy(
            update={
                "budget": s.budget.model_copy(
                    update={"max_turns": min(max_turns, s.budget.max_turns)}
                )
            }
        )
        for s in pack.scenarios
    ]
    return pack.model_copy(update={"scenarios": scenarios})


def plan_resume(folder: Path, target: str | None = None) -> HarnessPlan:
    """The plan of the run in ``folder``, to continue it. ``target``: the run's ``--target``
    given again, for one whose credentials were not stored (it must be the same target)."""
    folder = folder.resolve()
    path = folder / HARNESS_FILE
    if not path.is_file():
        raise LoomError(f"{folder} is not a harness run (no {HARNESS_FILE})")
    record = HARNESS_FORMAT.read(path)  # a newer or damaged file: one sentence naming it
    try:
        pack = Pack.model_validate(record.pack)
    except ValueError as exc:
        raise LoomError(
            f"{path} cannot be read ({exc}); it was not written by this loom-sim"
        ) from None
    if target is not None:
        if record.target is None or redact(target) != record.target:
            raise LoomError(
                f"--target {redact(target)!r} is not the target of {folder} "
                f"({record.target or 'each scenario its own'}); a resume runs the same target"
            )
        record = msgspec.structs.replace(record, target=target)  # in memory only
    elif record.target_secret:
        raise LoomError(
            f"{folder} ran against {record.target!r}, whose credentials were not stored; "
            f"give the target again: loom-sim harness run --resume {folder} --target TARGET"
        )
    return HarnessPlan(folder, record, pack, sessions_of(folder, record, pack))


def finished(spec: SessionSpec) -> bool:
    """Whether a session ran to ``done`` already (a resumed run skips it)."""
    path = spec.bundle.path(SESSION_FILE)
    if not path.is_file():
        return False
    session = read_session(path)
    return session is not None and session.status == "done"
