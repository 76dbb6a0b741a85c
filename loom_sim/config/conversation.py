"""The sections of a config that say how a run talks: its safety limits, models per role and
prices, and the conversation (who opens, lengths, failure tolerance)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    Field,
    field_validator,
    model_validator,
)

from loom_sim.config.sections import (
    Section,
)
from loom_sim.models.providers import PROVIDERS

# ─── model specs ────────────────────────────────────────────────────────────


def check_model_spec(spec: str | None) -> str | None:
    if spec is None:
        return spec
    provider, sep, name = spec.partition("/")
    if not sep or not name or provider not in PROVIDERS:
        raise ValueError(
            f"model {spec!r} is not a model spec: write <provider>/<model> with provider one of "
            + ", ".join(PROVIDERS.names())
            + " (e.g. local/smollm2, openai/gpt-4.1)"
        )
    return spec


def known_providers(value: dict[str, int]) -> dict[str, int]:
    unknown = [name for name in value if name not in PROVIDERS]
    if unknown:
        raise ValueError(PROVIDERS.unknown(unknown[0]))
    return value


def provider_names_schema(schema: dict[str, Any]) -> None:
    schema["propertyNames"] = {"enum": PROVIDERS.names()}


# ─── safety ─────────────────────────────────────────────────────────────────


class SafetySpec(Section):
    intensity_ceiling: float = Field(
        0.9, gt=0.0, le=1.0, description="No dimension may ever exceed this value."
    )
    forbidden_simulation_content: list[str] = Field(
        default_factory=list, description="Content the persona must never produce."
    )
    escalation_policy: str = Field(
        "", description="What the persona does at maximum intensity instead of escalating further."
    )
    persona_safety_note: str = Field("", description="The spirit in which the persona is played.")


# ─── models and conversation ────────────────────────────────────────────────


class PriceSpec(Section):
    input_per_mtok: float = Field(ge=0.0, description="USD per million input tokens.")
    output_per_mtok: float = Field(ge=0.0, description="USD per million output tokens.")


class ModelsSpec(Section):
    """Model per role (the CLI's flags override these; the default is the embedded model)."""

    persona: str | None = Field(None, description="Model spec for the persona, e.g. local/smollm2.")
    interlocutor: str | None = Field(
        None, description="Model under evaluation, e.g. openai/gpt-4.1."
    )
    judge: str | None = Field(None, description="Model spec for the judge.")
    pricing: dict[str, PriceSpec] = Field(
        default_factory=dict,
        description="Model spec -> price, overriding the built-in table; unknown prices are "
        "recorded as unknown, not 0.",
    )
    context_tokens: dict[str, Annotated[int, Field(ge=256)]] = Field(
        default_factory=dict, description="Model spec -> context window, overriding the default."
    )
    provider_concurrency: Annotated[
        dict[str, Annotated[int, Field(ge=1)]], AfterValidator(known_providers)
    ] = Field(
        json_schema_extra=provider_names_schema,
        default_factory=dict,
        description="Provider -> most calls in flight at once (default: enough for --concurrency "
        "rollouts; local: 1).",
    )

    @field_validator("persona", "interlocutor", "judge")
    @classmethod
    def _model_spec(cls, value: str | None) -> str | None:
        return check_model_spec(value)


class OpenerRole(StrEnum):
    PERSONA = "persona"
    INTERLOCUTOR = "interlocutor"


class ConversationSpec(Section):
    opener: OpenerRole = Field(
        OpenerRole.PERSONA,
        strict=False,
        description="Who speaks first: `persona` or `interlocutor`.",
    )
    opening_message: str = Field(
        "Hi! What would you like to talk about today?",
        min_length=1,
        description="The interlocutor's first message when it opens.",
    )
    persona_opening: str | None = Field(
        None,
        min_length=1,
        description="The persona's first message, sent word for word instead of written by "
        "its model (a benchmark scenario's fixed opening prompt); with `opener: persona` only.",
    )
    interlocutor_system_prompt: str = Field(
        "You are a helpful assistant.",
        description="System prompt of the model under evaluation (`--target-system` overrides).",
    )
    persona_max_tokens: int = Field(300, ge=16, description="Longest persona reply, in tokens.")
    interlocutor_max_tokens: int = Field(
        500, ge=16, description="Longest interlocutor reply, in tokens."
    )
    temperature: float = Field(0.8, ge=0.0, le=2.0, description="Sampling temperature.")
    history_budget_tokens: int | None = Field(
        None,
        ge=256,
        description="Most tokens of history sent per call; older turns are cut (recorded; the "
        "persona's in steps of half its room, so its prompt keeps its prefix). "
        "Default: the model's context window minus the reply.",
    )
    max_consecutive_failures: int = Field(
        3, ge=1, description="Failed turns in a row (empty or unusable replies) that end a rollout."
    )

    @model_validator(mode="after")
    def _opening_is_the_persona_s(self) -> ConversationSpec:
        if self.persona_opening is not None and self.opener is OpenerRole.INTERLOCUTOR:
            raise ValueError(
                "persona_opening is the persona's first message: it needs `opener: persona` "
                "(here the interlocutor speaks first)"
            )
        return self
