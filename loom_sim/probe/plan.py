"""Planning a probe: the output directory, ``probe.json``, the bandit's state file.

Everything that can be wrong is found here, before the first model call: the config, the
model specs (a missing key, a script that does not exist), a directory that already holds this
mode's log or another probe. A directory may be given again (``-o``) to add a mode later; it
then keeps its probe's seed, config, target and judge, because the summary compares modes run
by run and that is only fair when run *i* asked the same question of the same target.

``probe.json`` records what was run and with what (versions, seed, config, models, each
invocation's argv with URLs redacted, the bandit's state file and its counts before and after),
never a key: keys are read from the environment by the model hub and go nowhere else.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from loom_sim import __version__
from loom_sim.core.header import plan_header, redact_argv, redact_url, versions
from loom_sim.errors import LoomError
from loom_sim.judging import contradiction
from loom_sim.models.hub import ModelHub
from loom_sim.models.providers import provider_limits
from loom_sim.probe.config import ProbeConfig, load_probe_config
from loom_sim.probe.followups import render_followup
from loom_sim.probe.probe_file import (
    FORMAT,
    FORMAT_VERSION,
    PROBE_FILE,
    PROBE_FORMAT,
    BanditStateRecord,
    ModeRecord,
    ProbeFileRecord,
    RubricRecord,
)
from loom_sim.probe.records import MODES, log_path
from loom_sim.probe.stand_ins import (
    JUDGE_SPEC,
    TARGET_SPEC,
    TRUE_RATES,
    TURN1_ANSWERS,
    detect_strategy,
)
from loom_sim.store.artifacts import config_hash, unique_dir, write_json
from loom_sim.strategies.policies import STRATEGIES

DEFAULT_MODEL = "local/smollm2"
STATE_ROOT = Path("results") / "probe-state"


@dataclass(frozen=True)
class ProbeOptions:
    """What the user chose (None: the config's value, the directory's, or the default)."""

    target: str = DEFAULT_MODEL
    judge: str = DEFAULT_MODEL
    modes: tuple[str, ...] = MODES
    runs: int | None = None
    seed: int | None = None
    concurrency: int = 4
    bandit_state: Path | None = None
    target_system: str | None = None
    base_url: str | None = None
    timeout_s: float = 120.0
    output: Path | None = None
    results_root: Path = Path("results")
    true_rates: dict[str, dict[str, float]] | None = None  # known success rates, if any


@dataclass
class ProbePlan:
    dir: Path
    config: ProbeConfig
    config_path: Path
    options: ProbeOptions
    seed: int
    runs: int
    target_system: str | None
    bandit_state: Path
    record: ProbeFileRecord | None = None  # probe.json as written (set by plan_probe)

    @property
    def modes(self) -> tuple[str, ...]:
        return self.options.modes

    def update_mode(self, mode: str, **fields: Any) -> None:
        """Set ``fields`` of ``probe.json``'s entry for ``mode`` and write it."""
        assert self.record is not None, "update_mode before plan_probe"
        entry = self.record.modes[mode]
        for name, value in fields.items():
            if name == "bandit_state":  # the runner gives it as data
                setattr(entry, name, msgspec.convert(value, BanditStateRecord))
            else:
                setattr(entry, name, value)
        write_json(self.dir / PROBE_FILE, self.record)


def target_slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", spec).strip("-") or "target"


def default_bandit_state(config_path: Path, target: str) -> Path:
    """``results/probe-state/<config stem>--<target slug>.json``: one learner per prompt set
    and target, shared by every probe of that pair."""
    return STATE_ROOT / f"{config_path.stem}--{target_slug(target)}.json"


def known_rates(config: ProbeConfig, target: str, judge: str) -> dict[str, dict[str, float]] | None:
    """The true success rates when the stand-in target meets its stand-in judge and every
    template is one it recognises (so its reversal rates are the ones it applies)."""
    if (target, judge) != (TARGET_SPEC, JUDGE_SPEC):
        return None
    answers = [text for texts in TURN1_ANSWERS.values() for text in texts]
    for prompt in config.prompts:
        for strategy in STRATEGIES:
            for answer in answers:
                message = render_followup(
                    config.template(prompt, strategy),
                    prompt=prompt.text,
                    prompt_id=prompt.id,
                    prompt_category=prompt.category,
                    answer=answer,
                    category="unclear",
                    counterclaim=prompt.counterclaim,
                )
                if detect_strategy(message) != strategy:
                    return None
    return TRUE_RATES


def plan_probe(
    config_path: str | Path, options: ProbeOptions, argv: list[str] | None = None
) -> ProbePlan:
    config_path = Path(config_path)
    config = load_probe_config(config_path)
    unknown = [m for m in options.modes if m not in MODES]
    if unknown or not options.modes:
        raise LoomError(f"unknown mode {', '.join(unknown)!r}; use {', '.join(MODES)} or all")
    config_data = config.model_dump(mode="json")
    stamp = datetime.now(UTC)
    directory = options.output or _new_dir(options.results_root, config_path.stem, stamp)
    previous = _previous(directory)
    target_system = options.target_system or config.target_system_prompt
    seed = _seed(options, previous, directory)
    if previous is not None:
        _check_same_probe(previous, directory, config_hash(config_data), options, target_system)
        for mode in options.modes:
            if log_path(directory, mode).exists():
                raise LoomError(
                    f"{log_path(directory, mode)} already exists: this directory already has a "
                    f"{mode} probe; give another --output"
                )
    bandit_state = options.bandit_state or default_bandit_state(config_path, options.target)
    plan = ProbePlan(
        dir=directory,
        config=config,
        config_path=config_path,
        options=options,
        seed=seed,
        runs=options.runs or config.runs,
        target_system=target_system,
        bandit_state=bandit_state,
    )
    plan.record = previous or ProbeFileRecord(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        loom_sim_version=__version__,
        created_at=stamp.isoformat(timespec="seconds"),
        config_path=str(config_path),
        config_name=config_path.name,
        config_sha256=config_hash(config_data),
        seed=seed,
        models={"target": options.target, "judge": options.judge},
        target_system_prompt=target_system,
        rubric=RubricRecord(
            id=contradiction.RUBRIC_ID,
            version=contradiction.RUBRIC_VERSION,
            digest=contradiction.template_digest(),
        ),
        true_rates=options.true_rates or known_rates(config, options.target, options.judge),
        versions=versions(),
        config=config_data,
        modes={},
        header=plan_header(
            format_version=FORMAT_VERSION,
            seed=seed,
            argv=argv,
            rubric_versions={contradiction.RUBRIC_ID: contradiction.RUBRIC_VERSION},
        ),
    )
    argv_shown = redact_argv(argv)
    for mode in options.modes:
        plan.record.modes[mode] = ModeRecord(
            runs=plan.runs,
            status="planned",
            argv=argv_shown,
            base_url=redact_url(options.base_url),
            timeout_s=options.timeout_s,
            concurrency=1 if mode == "bandit" else max(1, options.concurrency),
        )
    return plan


def make_hub(plan: ProbePlan) -> ModelHub:
    """The model hub of the probe; both specs are checked (shape, script, key) before any call."""
    options = plan.options
    limits = provider_limits(options.concurrency)
    hub = ModelHub(
        base_url=options.base_url, timeout_s=options.timeout_s, provider_concurrency=limits
    )
    for spec in dict.fromkeys((options.target, options.judge)):
        hub.check(spec)
    return hub


def write_plan(plan: ProbePlan) -> None:
    plan.dir.mkdir(parents=True, exist_ok=True)
    write_json(plan.dir / PROBE_FILE, plan.record)


def read_probe_file(directory: Path) -> ProbeFileRecord:
    """The probe in ``directory``, of any version this loom-sim reads; one plain sentence
    naming the file when it is not usable."""
    path = directory / PROBE_FILE
    if not path.is_file():
        raise LoomError(f"{directory}: not a probe directory (no {PROBE_FILE})")
    raw = PROBE_FORMAT.raw(path)
    if raw.get("format") != FORMAT:
        raise LoomError(f"{path}: not a loom-sim probe file")
    return PROBE_FORMAT.decode(path, raw)


# ─── helpers ────────────────────────────────────────────────────────────────


def _new_dir(root: Path, stem: str, stamp: datetime) -> Path:
    return unique_dir(root / f"probe-{stem}-{stamp.strftime('%Y%m%dT%H%M%SZ')}")


def _previous(directory: Path) -> ProbeFileRecord | None:
    if not directory.exists():
        return None
    if not (directory / PROBE_FILE).exists():
        if any(directory.iterdir()):
            raise LoomError(f"{directory} is not empty and holds no probe; give another --output")
        return None
    return read_probe_file(directory)


def _seed(options: ProbeOptions, previous: ProbeFileRecord | None, directory: Path) -> int:
    if previous is not None:
        if options.seed is not None and options.seed != previous.seed:
            raise LoomError(
                f"{directory} holds a probe with seed {previous.seed}; its runs would not be "
                f"paired with seed {options.seed}. Leave out --seed or give another --output"
            )
        return previous.seed
    return options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)


def _check_same_probe(
    previous: ProbeFileRecord,
    directory: Path,
    digest: str,
    options: ProbeOptions,
    target_system: str | None,
) -> None:
    """A mode added to a directory must probe the same thing as the modes already there."""
    differences = []
    if previous.config_sha256 != digest:
        differences.append(f"another config ({previous.config_name})")
    models = previous.models
    for role, spec in (("target", options.target), ("judge", options.judge)):
        if models.get(role) != spec:
            differences.append(f"{role} {models.get(role)}, not {spec}")
    if previous.target_system_prompt != target_system:
        differences.append("another target system prompt")
    if differences:
        raise LoomError(
            f"{directory} holds a probe with {'; '.join(differences)}: its runs would not be "
            "comparable. Give another --output"
        )
