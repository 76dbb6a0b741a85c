"""The evaluation section of a config: scorers (by registry) and the adversary."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from loom_sim.config.conversation import check_model_spec
from loom_sim.config.sections import (
    Section,
    registered_settings,
    section_properties,
    validate_sections,
)
from loom_sim.config.sections import error as section_error

# ─── evaluation ─────────────────────────────────────────────────────────────


class ScorerSettings(Section):
    """A scorer's section of ``evaluation.scoring``: every scorer has these."""

    enabled: bool = Field(True, description="Run this scorer.")
    description: str = Field("", description="A note for readers of the config and report.")


class SampledScorerSettings(ScorerSettings):
    """A scorer that scores a seeded sample of turns (its judge calls cost the most)."""

    sample_rate: float = Field(
        0.3, gt=0.0, le=1.0, description="Fraction of turns scored (seeded sample)."
    )


def _scorer_settings(info: Any) -> type[ScorerSettings]:
    settings = info.settings or ScorerSettings
    if not (isinstance(settings, type) and issubclass(settings, ScorerSettings)):
        raise TypeError(f"scorer {info.name!r}: its settings must subclass ScorerSettings")
    return settings


def _scoring_schema(schema: dict[str, Any], handler: Any) -> None:
    # The JSON Schema lists the registered scorers, each with its own settings' schema.
    from loom_sim.plugins.scorers import SCORERS

    properties: dict[str, Any] = {
        "target": {
            "type": "array",
            "items": {"enum": [i.name for i in SCORERS if i.subject == "target"]},
            "uniqueItems": True,
            "description": TARGET_DESCRIPTION,
        },
        **section_properties(SCORERS, _scorer_settings),
    }
    schema.clear()
    schema.update(
        {
            "type": "object",
            "description": "Which scorers run, by name (see docs/scoring.md); each has its "
            "own settings.",
            "properties": properties,
            "additionalProperties": False,
        }
    )


TARGET_DESCRIPTION = (
    "Scorers of the model under evaluation to run (e.g. `[dcs, hes, sis, dimensions, markers]`); "
    "none by default. A listed scorer still needs its own section's `enabled` (default true)."
)


class ScoringSpec(Section):
    """Every registered scorer's settings, by its config key (absent: the defaults), and
    `target`: which scorers of the model under evaluation run.

    The keys and their settings come from the scorer registry, so a scorer a package adds is
    configured here like loom-sim's own, and a misspelled key is an error at its line.
    """

    model_config = ConfigDict(
        extra="allow", frozen=True, json_schema_extra=_scoring_schema, title="ScoringSpec"
    )
    __pydantic_extra__: dict[str, SerializeAsAny[ScorerSettings]]

    target: tuple[str, ...] = Field((), description=TARGET_DESCRIPTION)

    @model_validator(mode="before")
    @classmethod
    def _by_registry(cls, data: Any) -> Any:
        from loom_sim.plugins.scorers import SCORERS

        if data is None:
            data = {}
        if not isinstance(data, dict):
            return data  # pydantic reports the wrong type
        by_key = {info.config_key: info for info in SCORERS}
        target, errors = _target_list(data.get("target"), SCORERS)
        found, wrong = validate_sections(
            data, by_key, _scorer_settings, noun="scorer", skip=("target",)
        )
        errors += wrong
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return {"target": target, **found}

    def runs(self, info: Any) -> bool:
        """Whether the registered scorer ``info`` runs under this config: its section's
        ``enabled``, and for a scorer of the model under evaluation, being in ``target``."""
        if not self.of(info.config_key).enabled:
            return False
        return info.subject != "target" or info.name in self.target

    def of(self, config_key: str) -> ScorerSettings:
        """A scorer's settings (the defaults when the scorer was registered after this config
        was validated)."""
        from loom_sim.plugins.scorers import SCORERS

        return registered_settings(
            self.__pydantic_extra__, SCORERS, config_key, _scorer_settings, ScorerSettings
        )


def _target_list(value: Any, scorers: Any) -> tuple[tuple[str, ...], list[InitErrorDetails]]:
    """``evaluation.scoring.target``: names of registered scorers of the model under
    evaluation, each at most once; every wrong entry is reported at its position."""
    if value is None:
        return (), []
    names = [info.name for info in scorers if info.subject == "target"]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        message = "give a list of scorer names, e.g. [dcs, hes, sis, dimensions, markers]"
        return (), [section_error(("target",), message, value)]
    errors = []
    for index, name in enumerate(value):
        if not isinstance(name, str) or name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            message = (
                f"{name!r} is not a scorer of the model under evaluation{hint}; "
                f"they are: {', '.join(names) or 'none'}"
            )
            errors.append(section_error(("target", index), message, name))
        elif name in value[:index]:
            errors.append(section_error(("target", index), f"{name!r} is listed twice", name))
    return tuple(value) if not errors else (), errors


def _adversary_choices() -> list[str]:
    from loom_sim.plugins.actors import adversaries

    return ["none", *(a.name for a in adversaries()), "both"]


def _adversary_type_schema(schema: dict[str, Any]) -> None:
    schema["enum"] = _adversary_choices()


class AdversarySpec(Section):
    type: str = Field(
        "none",
        description="Which adversary replaces the interlocutor: `none`, an adversary's name "
        "(`loom-sim run --help` lists them), or `both` (every adversary, in turn).",
        json_schema_extra=_adversary_type_schema,
    )
    model: str | None = Field(
        None,
        description="Model spec for the adversary, e.g. openai/gpt-4.1 (default: the judge's).",
    )
    config_dir: str | None = Field(
        None,
        description=(
            "Directory holding contradiction.yaml and helpfulness.yaml, relative to this file "
            "(default: loom-sim's configs/adversaries)."
        ),
    )

    @field_validator("model")
    @classmethod
    def _model_spec(cls, value: str | None) -> str | None:
        return check_model_spec(value)

    @field_validator("type")
    @classmethod
    def _known_adversary(cls, value: str) -> str:
        if value in ("none", "both"):  # no need to load every actor kind to know these
            return value
        choices = _adversary_choices()
        if value not in choices:
            raise ValueError(f"unknown adversary {value!r}; use one of {', '.join(choices)}")
        return value


class EvaluationSpec(Section):
    scoring: ScoringSpec = Field(default_factory=ScoringSpec, description="Which scorers run.")
    adversary: AdversarySpec = Field(
        default_factory=AdversarySpec, description="An adversary in place of the interlocutor."
    )
