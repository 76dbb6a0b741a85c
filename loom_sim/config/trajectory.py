"""The trajectory section of a config: intensity curves per dimension, and the phases with
their revelations and ends."""

from __future__ import annotations

import itertools
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from loom_sim.config.sections import (
    Section,
)
from loom_sim.config.values import Fraction, Intensity

# ─── trajectory: curves ─────────────────────────────────────────────────────


class CurveType(StrEnum):
    LINEAR = "linear"
    SIGMOID = "sigmoid"
    DELAYED_RAMP = "delayed_ramp"
    STEP = "step"
    CUSTOM = "custom"


class LinearCurve(Section):
    """Straight line from start_value to end_value."""

    type: Literal["linear"]


class SigmoidCurve(Section):
    """S-curve: slow start, steep middle, slow end; exactly halfway at ``midpoint_pct``."""

    type: Literal["sigmoid"]
    midpoint_pct: float = Field(
        0.5, gt=0.0, lt=1.0, description="Progress at which the value is halfway."
    )
    steepness: float = Field(
        10.0, gt=0.0, le=100.0, description="How sharp the rise is around the midpoint."
    )


class DelayedRampCurve(Section):
    """Holds start_value until ``delay_pct``, then rises linearly to end_value."""

    type: Literal["delayed_ramp"]
    delay_pct: float = Field(ge=0.0, lt=1.0, description="Progress until which the value holds.")
    ramp_end_pct: float = Field(
        1.0, gt=0.0, le=1.0, description="Progress at which end_value is reached."
    )

    @model_validator(mode="after")
    def _ramp_after_delay(self) -> DelayedRampCurve:
        if self.ramp_end_pct <= self.delay_pct:
            raise ValueError(
                f"ramp_end_pct ({self.ramp_end_pct}) must be after delay_pct ({self.delay_pct})"
            )
        return self


class StepCurve(Section):
    """Discrete jumps: one equal step from start_value towards end_value at each ``at_pct``."""

    type: Literal["step"]
    at_pct: list[Annotated[float, Field(gt=0.0, lt=1.0)]] = Field(
        min_length=1, description="Progress values at which the value jumps, in increasing order."
    )

    @field_validator("at_pct")
    @classmethod
    def _increasing(cls, values: list[float]) -> list[float]:
        for before, after in itertools.pairwise(values):
            if after <= before:
                raise ValueError(f"steps must be in increasing order: {after} follows {before}")
        return values


class ControlPoint(Section):
    pct: Fraction = Field(description="Progress through the conversation, 0 to 1.")
    value: Intensity = Field(description="The intensity at that point.")


class CustomCurve(Section):
    """Any shape, as control points; takes its values from the points, not start/end."""

    type: Literal["custom"]
    points: list[ControlPoint] = Field(
        min_length=1, description="Control points in increasing `pct` order."
    )
    interpolation: Literal["linear", "step"] = Field(
        "linear", description="`linear` between points, or `step` (hold each value until the next)."
    )

    @field_validator("points")
    @classmethod
    def _increasing(cls, points: list[ControlPoint]) -> list[ControlPoint]:
        for index, (before, after) in enumerate(itertools.pairwise(points), start=1):
            if after.pct <= before.pct:
                raise ValueError(
                    f"points must be in increasing pct order: point {index} has pct {after.pct} "
                    f"after {before.pct}"
                )
        return points


CurveSpec = Annotated[
    LinearCurve | SigmoidCurve | DelayedRampCurve | StepCurve | CustomCurve,
    Field(discriminator="type"),
]


#: Each curve type's own settings: the keys the draft config format writes *beside*
#: ``curve`` (``curve: sigmoid`` with ``midpoint_pct: 0.5`` next to it), moved under it.
CURVE_SETTINGS: dict[str, tuple[str, ...]] = {
    "linear": (),
    "sigmoid": ("midpoint_pct", "steepness"),
    "delayed_ramp": ("delay_pct", "ramp_end_pct"),
    "step": ("at_pct",),
    "custom": ("points", "interpolation"),
}


def _control_point(item: Any) -> Any:
    # `[0.5, 0.3]` is shorthand for `{pct: 0.5, value: 0.3}`.
    if isinstance(item, list | tuple) and len(item) == 2:
        return {"pct": item[0], "value": item[1]}
    return item


def _expand_curve_shorthand(value: Any) -> Any:
    """`curve: linear` is `curve: {type: linear}`; a list of control points is a custom curve."""
    if isinstance(value, str):
        return {"type": value}
    if isinstance(value, list):
        return {"type": "custom", "points": [_control_point(p) for p in value]}
    return value


def normalise_curve_settings(dimension: Any) -> Any:
    """The canonical form of a dimension written the draft format's way: the curve's settings
    beside ``curve`` move under it (``curve: {type: sigmoid, midpoint_pct: 0.5}``). Only the
    settings of the named curve type move; any other key stays and is reported where it is."""
    if not isinstance(dimension, dict):
        return dimension
    curve = _expand_curve_shorthand(dimension.get("curve"))
    if not isinstance(curve, dict) or not isinstance(curve.get("type"), str):
        return dimension
    # a setting given in both places stays beside, to be reported there as out of place
    beside = [k for k in CURVE_SETTINGS.get(curve["type"], ()) if k in dimension and k not in curve]
    if not beside:
        return dimension
    moved = {k: v for k, v in dimension.items() if k not in beside}
    moved["curve"] = {**curve, **{k: dimension[k] for k in beside}}
    return moved


def _curve_schema_accepts_shorthand(schema: dict[str, Any]) -> None:
    # The JSON Schema must also accept the shorthands, or editors flag valid configs: a bare
    # curve name, and a list of control points (mappings or [pct, value] pairs).
    tagged = {k: schema.pop(k) for k in list(schema) if k in ("oneOf", "anyOf", "discriminator")}
    point = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "pct": {"type": "number", "minimum": 0, "maximum": 1},
                    "value": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["pct", "value"],
                "additionalProperties": False,
            },
            {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        ]
    }
    schema["anyOf"] = [
        tagged,
        {"enum": [t.value for t in CurveType]},
        {"type": "array", "items": point, "minItems": 1},
    ]


def _dimension_schema_accepts_settings_beside_curve(schema: dict[str, Any]) -> None:
    # A config may write a curve's settings beside `curve`; they validate there too.
    properties = schema.setdefault("properties", {})
    for key in dict.fromkeys(k for keys in CURVE_SETTINGS.values() for k in keys):
        if key not in ("points", "interpolation"):
            properties[key] = {
                "description": f"Shorthand for `curve: {{..., {key}: ...}}` (moved under `curve`)."
            }


class DimensionSpec(Section):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra=_dimension_schema_accepts_settings_beside_curve,
    )

    description: str = Field("", description="What this dimension measures.")
    levels: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Named behaviour descriptions from lowest to highest (e.g. low / medium / high). "
            "The 0-1 range is split into equal bands, one per level, in the order written."
        ),
    )
    curve: Annotated[CurveSpec, BeforeValidator(_expand_curve_shorthand)] = Field(
        json_schema_extra=_curve_schema_accepts_shorthand,
        description=(
            "How the intensity moves over the conversation: a curve type name, or a mapping "
            "with `type` and its parameters."
        ),
    )
    start_value: Intensity | None = Field(
        None, description="Intensity at the start (not used by `custom` curves)."
    )
    end_value: Intensity | None = Field(
        None, description="Intensity at the end (not used by `custom` curves)."
    )
    min_value: Intensity = Field(0.0, description="Lowest value the dimension may take.")
    max_value: Intensity | None = Field(
        None, description="Highest value; defaults to safety.intensity_ceiling."
    )

    @model_validator(mode="before")
    @classmethod
    def _settings_beside_curve(cls, value: Any) -> Any:
        return normalise_curve_settings(value)

    @property
    def start(self) -> float:
        if isinstance(self.curve, CustomCurve):
            return self.curve.points[0].value
        assert self.start_value is not None  # guaranteed by the rules
        return self.start_value

    @property
    def end(self) -> float:
        if isinstance(self.curve, CustomCurve):
            return self.curve.points[-1].value
        assert self.end_value is not None
        return self.end_value

    @property
    def is_flat(self) -> bool:
        if isinstance(self.curve, CustomCurve):
            return len({p.value for p in self.curve.points}) == 1
        return self.start_value == self.end_value


# ─── trajectory: phases ─────────────────────────────────────────────────────


class PctEnd(Section):
    """The phase ends when this fraction of the conversation has passed."""

    type: Literal["pct"]
    value: float = Field(gt=0.0, le=1.0, description="Fraction of the conversation, 0-1.")


class TurnEnd(Section):
    """The phase covers the turns before ``value`` (0-based): turn ``value`` starts the next."""

    type: Literal["turn"]
    value: int = Field(ge=1, description="First turn of the next phase.")


class TriggerEnd(Section):
    """The phase ends once a condition about the conversation is met (judged at run time)."""

    type: Literal["trigger"]
    when: str = Field(min_length=1, description="The condition, in plain words.")
    max_turn: int | None = Field(
        None, ge=1, description="The phase ends before this turn even if the condition never holds."
    )


EndCondition = Annotated[PctEnd | TurnEnd | TriggerEnd, Field(discriminator="type")]


class RevelationVariants(Section):
    subtle: str | None = Field(None, description="Used while the driving intensity is below 1/3.")
    moderate: str | None = Field(None, description="Used from 1/3 to 2/3.")
    direct: str | None = Field(None, description="Used from 2/3 up.")

    @model_validator(mode="after")
    def _at_least_one(self) -> RevelationVariants:
        if not (self.subtle or self.moderate or self.direct):
            raise ValueError("give at least one of subtle, moderate, direct")
        return self

    def available(self) -> list[tuple[str, str]]:
        """(variant, text) pairs from least to most explicit."""
        pairs = [("subtle", self.subtle), ("moderate", self.moderate), ("direct", self.direct)]
        return [(name, text) for name, text in pairs if text]


class RevelationSpec(Section):
    topic: str = Field(min_length=1, description="Unique name of what is revealed.")
    variants: RevelationVariants = Field(
        description="The same revelation at up to three levels of explicitness."
    )
    dimension: str | None = Field(
        None,
        description="Dimension whose intensity picks the variant (default: the first dimension).",
    )


class PhaseSpec(Section):
    name: str = Field(min_length=1, description="Unique phase name.")
    end_condition: EndCondition | None = Field(
        None,
        description="When the phase ends; only the last phase may omit it (it runs to the end).",
    )
    requirements: list[str] = Field(
        default_factory=list, description="Things the persona MUST do in this phase."
    )
    forbidden: list[str] = Field(
        default_factory=list, description="Things the persona must NOT do yet."
    )
    revelations: list[RevelationSpec] = Field(
        default_factory=list, description="Topics the persona may introduce in this phase."
    )


class TrajectoryMode(StrEnum):
    FIXED_LENGTH = "fixed_length"
    PHASE_GATED = "phase_gated"
    OPEN_ENDED = "open_ended"


class TrajectorySpec(Section):
    mode: TrajectoryMode = Field(
        TrajectoryMode.FIXED_LENGTH,
        strict=False,
        description=(
            "`fixed_length`: phases and curves scale to the conversation's length. "
            "`phase_gated`: phases end on triggers or turns; curves run over expected_turns. "
            "`open_ended`: no length; phases end by turn or trigger, never by percentage."
        ),
    )
    expected_turns: int | None = Field(
        None, ge=1, le=100_000, description="Conversation length (required for fixed_length)."
    )
    dimensions: dict[str, DimensionSpec] = Field(
        default_factory=dict, description="Intensity dimensions, by name (a Python identifier)."
    )
    phases: list[PhaseSpec] = Field(min_length=1, description="Phases, in conversation order.")
