"""A scenario pack: personas, scenarios and the targets they drive, as pydantic models.

A pack (JSON, as the target-user harness seed has it, or YAML) is loaded with the same located
errors as persona configs (:func:`loom_sim.harness.packs.load_pack`): every problem with its
``file:line:col``. Every model forbids unknown keys, so a misspelled key fails loudly instead
of falling back to a default. Targets are validated by their adapter kind's own settings (the
``ADAPTERS`` registry), so a plug-in adapter's settings are checked like the built-in ones.

What a scenario's simulated user sees and what its evaluator scores are kept apart: the user
is given the persona, the context, the goal, the inputs and the tools the job needs; the
success criteria, the scorecard weights and the gate are the evaluator's alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from loom_sim.config.loader import field_errors
from loom_sim.core.paths import outside, refusal
from loom_sim.harness.packs.targets import TargetsField, check_targets, escaping_targets

SCHEMA_VERSION: Literal["1"] = "1"
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)]
#: The model roles of a session: who plays the user, who reflects, who evaluates.
ROLES = ("user", "reflector", "evaluator")
#: The scorecard's components, in their fixed order.
COMPONENTS = (
    "goal_progress",
    "artifact_quality_proxy",
    "ability_usage_quality",
    "efficiency_cost_time",
    "resilience",
    "reflection_quality",
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, strict=True)


class Ability(_Section):
    """A slash command the target offers (``/name args``)."""

    name: Name = Field(description="The command's name, without the slash.")
    usage: str = Field("", description="How it is called, e.g. `/blend IMAGE IMAGE [ALPHA]`.")
    summary: str = Field("", description="What it does, in a line.")
    evidence: str | None = Field(
        None,
        description="A regular expression the program's reply matches when the ability did its "
        "work (e.g. `^saved out\\d+`). An ability is credited only on evidence from the target: "
        "an event naming it, a new file, or a reply matching this.",
    )

    @field_validator("evidence")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression ({exc})") from None
        return value


class Persona(_Section):
    """Who the simulated user is."""

    who: str = Field(min_length=1, description="Who they are, in a sentence or two.")
    goals: list[str] = Field(default_factory=list, description="What they want in general.")
    habits: list[str] = Field(default_factory=list, description="How they tend to work and talk.")
    patience: int = Field(
        4,
        ge=1,
        le=100,
        description="Disheartening turns in a row (reflections below the policy's "
        "give_up_below_confidence) they sit through before giving up.",
    )
    expertise: Literal["novice", "intermediate", "expert"] = Field(
        "intermediate",
        description="novice: mostly plain requests; expert: mostly explicit commands.",
    )


# ─── success criteria ───────────────────────────────────────────────────────


class _Criterion(_Section):
    id: Name = Field(description="Unique within the scenario; names it in the scorecard.")
    weight: float = Field(1.0, gt=0, description="Its share of goal_progress, relative.")


class ArtifactsCriterion(_Criterion):
    """Enough new images: measured by the harness from the files themselves."""

    type: Literal["artifacts"]
    min: int = Field(1, ge=1, le=1000, description="How many new images.")
    by: list[Name] = Field(
        default_factory=list, description="Made by these abilities only (any, if empty)."
    )
    min_quality: float | None = Field(
        None, ge=0, le=1, description="Count only images whose measured quality reaches this."
    )


class EventsCriterion(_Criterion):
    """Enough events of a type in the target's event file."""

    type: Literal["events"]
    event: str = Field(min_length=1, description="The events' own `type` field.")
    min: int = Field(1, ge=1, le=1000)
    where: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Fields the events must also have, with these values."
    )


class OutputCriterion(_Criterion):
    """Replies matching a regular expression."""

    type: Literal["output"]
    pattern: str = Field(min_length=1, description="A regular expression, searched.")
    min: int = Field(1, ge=1, le=1000)

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression ({exc})") from None
        return value


class JudgedCriterion(_Criterion):
    """A statement the evaluator model judges against the transcript."""

    type: Literal["judged"]
    text: str = Field(min_length=1, description="What must be true by the end.")


Criterion = Annotated[
    ArtifactsCriterion | EventsCriterion | OutputCriterion | JudgedCriterion,
    Field(discriminator="type"),
]


# ─── budgets, scorecard, policy ─────────────────────────────────────────────


class Budget(_Section):
    """When a session stops without success."""

    max_turns: int = Field(12, ge=1, le=1000, description="Turns at most.")
    max_cost_usd: float | None = Field(
        None, ge=0, description="Model and target costs at most (target events' `cost_usd`)."
    )
    max_runtime_s: float | None = Field(900.0, gt=0, description="Wall time at most.")
    max_consecutive_failures: int = Field(
        3, ge=1, le=1000, description="Failed actions in a row at most."
    )


class Weights(_Section):
    """The scorecard's weights (defaults as below); they must sum to 1."""

    goal_progress: float = Field(0.35, ge=0, le=1)
    artifact_quality_proxy: float = Field(0.20, ge=0, le=1)
    ability_usage_quality: float = Field(0.15, ge=0, le=1)
    efficiency_cost_time: float = Field(0.15, ge=0, le=1)
    resilience: float = Field(0.10, ge=0, le=1)
    reflection_quality: float = Field(0.05, ge=0, le=1)

    @model_validator(mode="after")
    def _sum(self) -> Weights:
        total = sum(getattr(self, c) for c in COMPONENTS)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"the weights must sum to 1, not {total:g}")
        return self


class Gate(_Section):
    """The pass gate."""

    min_goal_progress: float = Field(0.7, ge=0, le=1)
    min_required_abilities_used: int = Field(1, ge=0, le=100)
    allow_adapter_fatal: bool = Field(False, description="Pass despite a fatal adapter error.")


class ScorecardSpec(_Section):
    weights: Weights = Field(default_factory=Weights)
    gate: Gate = Field(default_factory=Gate)


class Policy(_Section):
    """How the simulated user is run (recorded in session.json)."""

    history_turns: int = Field(6, ge=1, le=100, description="Past turns the user model sees.")
    audit_retries: int = Field(
        1, ge=0, le=5, description="Times a draft the audit flags is asked for again."
    )
    give_up_after: int = Field(
        3,
        ge=0,
        le=1000,
        description="The first turn at which the user model may choose to give up (a user "
        "who leaves before trying anything is a simulator failure, not a finding).",
    )
    give_up_below_confidence: float = Field(
        0.25, ge=0, le=1, description="A reflection below this confidence disheartens."
    )
    reflection_attempts: int = Field(
        3, ge=1, le=10, description="Asks for a reflection before it is recorded as invalid."
    )
    temperature: float = Field(0.7, ge=0, le=2, description="The user model's temperature.")
    max_tokens: int = Field(200, ge=16, le=8192, description="The user model's longest reply.")


# ─── scenarios and the pack ─────────────────────────────────────────────────


class Scenario(_Section):
    id: Name = Field(description="Unique in the pack; names the session's folder.")
    persona: Name = Field(description="A key of `personas`.")
    title: str = ""
    context: str = Field("", description="The project the user brings, told to the user.")
    inputs: list[str] = Field(
        default_factory=list,
        description="Files the user brings (paths relative to the pack), copied into the run.",
    )
    goal: str = Field(min_length=1, description="What the user is there to achieve.")
    required_abilities: list[str] = Field(
        default_factory=list,
        description="Abilities the job needs; `bridge|blend` means either.",
    )
    success_criteria: list[Criterion] = Field(min_length=1)
    budget: Budget = Field(default_factory=Budget)
    scorecard: ScorecardSpec = Field(default_factory=ScorecardSpec)
    policy: Policy | None = Field(None, description="Overrides the pack's default policy.")
    target: Name | None = Field(None, description="A key of `targets` (else the pack's).")

    def groups(self) -> list[list[str]]:
        """``["diagnose", "bridge|blend"]`` -> ``[["diagnose"], ["bridge", "blend"]]``."""
        groups = self.required_abilities
        return [[a.strip() for a in group.split("|") if a.strip()] for group in groups]


class Defaults(_Section):
    target: Name | None = Field(None, description="The target scenarios use by default.")
    models: dict[str, str] = Field(
        default_factory=dict,
        description="Model specs by role: user, reflector, evaluator.",
    )
    policy: Policy = Field(default_factory=Policy)


class Pack(_Section):
    """Personas, scenarios, and the targets their simulated users drive."""

    schema_version: Literal["1"] = SCHEMA_VERSION
    description: str = ""
    abilities: list[Ability] = Field(
        default_factory=list, description="The slash commands the pack's targets offer."
    )
    targets: TargetsField = Field(default_factory=dict)
    personas: dict[Name, Persona] = Field(min_length=1)
    scenarios: list[Scenario] = Field(min_length=1)
    defaults: Defaults = Field(default_factory=Defaults)

    @model_validator(mode="after")
    def _cross(self, info: ValidationInfo) -> Pack:
        context = info.context or {}
        base = context.get("base")
        issues = _cross_issues(
            self, Path(base) if base is not None else None, context.get("allow_outside", False)
        )
        if issues:
            raise field_errors(type(self).__name__, issues)
        return self

    def scenario(self, id_: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.id == id_:
                return scenario
        raise KeyError(id_)


def _cross_issues(
    pack: Pack, base: Path | None, allow_outside: bool = False
) -> list[tuple[tuple[Any, ...], str]]:
    """Problems between fields; with the pack's folder ``base``, the files it names too (kept
    inside that folder unless ``allow_outside``)."""
    issues: list[tuple[tuple[Any, ...], str]] = []
    known = {a.name for a in pack.abilities}

    def ability(loc: tuple[Any, ...], name: str) -> None:
        if known and name not in known:
            listed = ", ".join(sorted(known))
            issues.append((loc, f"unknown ability {name!r}; abilities: {listed}"))

    default = pack.defaults.target
    if default is not None and default not in pack.targets:
        issues.append((("defaults", "target"), _unknown("target", default, pack.targets)))
    for role in pack.defaults.models:
        if role not in ROLES:
            message = f"unknown role {role!r}; roles: {', '.join(ROLES)}"
            issues.append((("defaults", "models", role), message))
    issues += check_targets(pack.targets)
    if not allow_outside:
        issues += escaping_targets(pack.targets)
    seen: set[str] = set()
    for i, scenario in enumerate(pack.scenarios):
        at = ("scenarios", i)
        if scenario.id in seen:
            issues.append(((*at, "id"), f"a second scenario is named {scenario.id!r}"))
        seen.add(scenario.id)
        if scenario.persona not in pack.personas:
            issues.append(((*at, "persona"), _unknown("persona", scenario.persona, pack.personas)))
        if scenario.target is not None and scenario.target not in pack.targets:
            issues.append(((*at, "target"), _unknown("target", scenario.target, pack.targets)))
        for j, group in enumerate(scenario.groups()):
            if not group:
                issues.append(((*at, "required_abilities", j), "an empty ability group"))
            for name in group:
                ability((*at, "required_abilities", j), name)
        ids: set[str] = set()
        for j, criterion in enumerate(scenario.success_criteria):
            where = (*at, "success_criteria", j)
            if criterion.id in ids:
                issues.append(((*where, "id"), f"a second criterion is named {criterion.id!r}"))
            ids.add(criterion.id)
            if isinstance(criterion, ArtifactsCriterion):
                for name in criterion.by:
                    ability((*where, "by"), name)
        if base is not None:
            for j, entry in enumerate(scenario.inputs):
                path = base / entry
                escaped = None if allow_outside else outside(base, entry)
                if escaped is not None:
                    issues.append(((*at, "inputs", j), refusal(entry, escaped, "pack's folder")))
                elif not path.is_file():
                    issues.append(((*at, "inputs", j), f"no such file: {path}"))
    return issues


def _unknown(what: str, name: str, known: dict[str, Any]) -> str:
    return f"no {what} named {name!r}; {what}s: {', '.join(known) or 'none'}"
