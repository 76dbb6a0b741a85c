"""The loom-sim config: a persona, the trajectory it follows, and how a run treats it.

This module holds the whole config, and re-exports each section's models (one module per section:
``persona``, ``trajectory``, ``interaction``, ``evaluation``, ``conversation``). These models are
the single source of truth for the YAML format: validation, the JSON Schema
(``loom-sim schema``) and the field reference in ``docs/config.md`` are all generated from them,
so every field carries its description here. Every model rejects unknown keys: a misspelled
key must fail loudly, not vanish.

Rules that relate several fields (phase order, bounds against the safety ceiling, names that
must refer to something) live in :mod:`loom_sim.config.rules`, so they can report the exact
field at fault and still run when another section has errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from loom_sim.config.conversation import (
    ConversationSpec,
    ModelsSpec,
    OpenerRole,
    PriceSpec,
    SafetySpec,
    check_model_spec,
    known_providers,
    provider_names_schema,
)
from loom_sim.config.errors import Issue
from loom_sim.config.evaluation import (
    TARGET_DESCRIPTION,
    AdversarySpec,
    EvaluationSpec,
    SampledScorerSettings,
    ScorerSettings,
    ScoringSpec,
)
from loom_sim.config.interaction import (
    DEFAULT_INTERVENTION,
    DEFAULT_REMINDER,
    AntiCapitulationSpec,
    BannedPattern,
    EmbeddingBackend,
    InjectionSpec,
    InteractionSpec,
    RedirectSpec,
    RepetitionDetectionSpec,
    ResistanceLevel,
    ResponseLengthSpec,
    StagnationDetectionSpec,
    StructuralPattern,
    TfidfThresholds,
)
from loom_sim.config.persona import (
    CapabilityBoundsSpec,
    IdentitySpec,
    PersonaSpec,
)
from loom_sim.config.sections import (
    Section,
)
from loom_sim.config.trajectory import (
    CURVE_SETTINGS,
    ControlPoint,
    CurveSpec,
    CurveType,
    CustomCurve,
    DelayedRampCurve,
    DimensionSpec,
    EndCondition,
    LinearCurve,
    PctEnd,
    PhaseSpec,
    RevelationSpec,
    RevelationVariants,
    SigmoidCurve,
    StepCurve,
    TrajectoryMode,
    TrajectorySpec,
    TriggerEnd,
    TurnEnd,
    normalise_curve_settings,
)
from loom_sim.config.values import (
    CURRENT_SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    Fraction,
    Intensity,
)

#: Every section's models, importable from here as before the sections had modules of their own.
__all__ = [
    "CROSS_FIELD_RULES",
    "CURRENT_SCHEMA_VERSION",
    "CURVE_SETTINGS",
    "DEFAULT_INTERVENTION",
    "DEFAULT_REMINDER",
    "SCHEMA_VERSIONS",
    "TARGET_DESCRIPTION",
    "AdversarySpec",
    "AntiCapitulationSpec",
    "BannedPattern",
    "CapabilityBoundsSpec",
    "ControlPoint",
    "ConversationSpec",
    "CurveSpec",
    "CurveType",
    "CustomCurve",
    "DelayedRampCurve",
    "DimensionSpec",
    "EmbeddingBackend",
    "EndCondition",
    "EvaluationSpec",
    "Fraction",
    "IdentitySpec",
    "InjectionSpec",
    "Intensity",
    "InteractionSpec",
    "LinearCurve",
    "LoomConfig",
    "ModelsSpec",
    "OpenerRole",
    "PctEnd",
    "PersonaSpec",
    "PhaseSpec",
    "PriceSpec",
    "RedirectSpec",
    "RepetitionDetectionSpec",
    "ResistanceLevel",
    "ResponseLengthSpec",
    "RevelationSpec",
    "RevelationVariants",
    "SafetySpec",
    "SampledScorerSettings",
    "ScorerSettings",
    "ScoringSpec",
    "SigmoidCurve",
    "StagnationDetectionSpec",
    "StepCurve",
    "StructuralPattern",
    "TfidfThresholds",
    "TrajectoryMode",
    "TrajectorySpec",
    "TriggerEnd",
    "TurnEnd",
    "check_model_spec",
    "known_providers",
    "normalise_curve_settings",
    "provider_names_schema",
]


# ─── the whole config ───────────────────────────────────────────────────────


#: The cross-field rules every validated config passes. :mod:`loom_sim.config.rules` adds its
#: checks when the package loads: the rules need these models, so the models take the rules as
#: data instead of importing them (no cycle between the two modules).
CROSS_FIELD_RULES: list[Callable[[LoomConfig], list[Issue]]] = []


class LoomConfig(Section):
    """A loom-sim config: persona, trajectory, interaction protocol, evaluation and safety."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="loom-sim config")

    schema_version: str = Field(
        description=f"Config format version; known: {', '.join(SCHEMA_VERSIONS)}."
    )
    persona: PersonaSpec = Field(description="Who is simulated.")
    trajectory: TrajectorySpec = Field(description="How the persona changes over the conversation.")
    interaction: InteractionSpec = Field(
        default_factory=InteractionSpec,
        description="How the scaffolding is delivered, and the runtime monitors.",
    )
    evaluation: EvaluationSpec = Field(
        default_factory=EvaluationSpec, description="Scorers and the adversary."
    )
    safety: SafetySpec = Field(
        default_factory=SafetySpec, description="Limits every simulation keeps, whatever else says."
    )
    models: ModelsSpec = Field(default_factory=ModelsSpec, description="Models per role, prices.")
    conversation: ConversationSpec = Field(
        default_factory=ConversationSpec,
        description="Who opens, the interlocutor's system prompt, lengths, failure tolerance.",
    )

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        if isinstance(value, (int, float)):
            value = str(value)  # `schema_version: 0.1` is a float in YAML
        if value not in SCHEMA_VERSIONS:
            raise ValueError(
                f"unknown schema_version {value!r}; this loom-sim reads "
                + ", ".join(repr(v) for v in SCHEMA_VERSIONS)
            )
        return value

    @model_validator(mode="after")
    def _cross_field_rules(self, info: ValidationInfo) -> LoomConfig:
        # The loader runs the rules itself so it can place each problem on its line; code that
        # builds a config directly gets the same rules here.
        if info.context and info.context.get("defer_rules"):
            return self
        issues = [issue for rule in CROSS_FIELD_RULES for issue in rule(self)]
        if issues:
            raise ValueError("; ".join(f"{issue.path}: {issue.message}" for issue in issues))
        return self

    @property
    def persona_name(self) -> str:
        return self.persona.identity.name
