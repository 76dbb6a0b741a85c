"""Rules that relate several fields of a config.

Each rule reports the exact field at fault. They take sections rather than a whole config so
the loader can still run them when an unrelated section failed to validate: a user with a typo
in ``persona`` should also hear that a phase is out of order, in the same run.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import dataclass

from loom_sim.config.errors import Issue
from loom_sim.config.spec import (
    CROSS_FIELD_RULES,
    CustomCurve,
    DimensionSpec,
    InteractionSpec,
    LoomConfig,
    PctEnd,
    SafetySpec,
    TrajectoryMode,
    TrajectorySpec,
    TriggerEnd,
    TurnEnd,
)

# Fields every user-written template (reminder, intervention) may use besides dimension names.
TEMPLATE_FIELDS = ("name", "current_phase", "turn", "turns")
INTERVENTION_FIELDS = TEMPLATE_FIELDS + ("next_unused_revelation",)

TRAJ = ("trajectory",)


@dataclass(frozen=True)
class Sections:
    """Whatever sections validated; a rule that needs a missing section is skipped."""

    trajectory: TrajectorySpec | None = None
    safety: SafetySpec | None = None
    interaction: InteractionSpec | None = None


def check(config: LoomConfig) -> list[Issue]:
    return check_sections(Sections(config.trajectory, config.safety, config.interaction))


CROSS_FIELD_RULES.append(check)  # every validated LoomConfig passes these


def check_sections(sections: Sections) -> list[Issue]:
    issues: list[Issue] = []
    if sections.trajectory is not None:
        ceiling = sections.safety.intensity_ceiling if sections.safety else None
        issues += _dimensions(sections.trajectory, ceiling)
        issues += _phases(sections.trajectory)
        issues += _revelations(sections.trajectory)
    if sections.interaction is not None:
        dims = tuple(sections.trajectory.dimensions) if sections.trajectory else None
        issues += _templates(sections.interaction, dims)
        if sections.trajectory is not None:
            issues += _length_by_phase(sections.interaction, sections.trajectory)
    return issues


# ─── dimensions ─────────────────────────────────────────────────────────────


def _dimensions(trajectory: TrajectorySpec, ceiling: float | None) -> Iterator[Issue]:
    for name, dim in trajectory.dimensions.items():
        loc = TRAJ + ("dimensions", name)
        if not name.isidentifier():
            yield Issue(
                loc, f"dimension name {name!r} must be a Python identifier (letters, digits, _)"
            )
        elif name in INTERVENTION_FIELDS:
            yield Issue(loc, f"dimension name {name!r} is reserved for templates; rename it")
        yield from _dimension_values(dim, loc, ceiling)

    if trajectory.mode is not TrajectoryMode.FIXED_LENGTH and trajectory.expected_turns is None:
        for name, dim in trajectory.dimensions.items():
            if not dim.is_flat:
                yield Issue(
                    TRAJ + ("dimensions", name, "curve"),
                    f"{trajectory.mode.value} trajectory without expected_turns: this dimension "
                    "changes but has no horizon to change over; set trajectory.expected_turns "
                    "or make it flat",
                )


def _dimension_values(dim: DimensionSpec, loc: tuple, ceiling: float | None) -> Iterator[Issue]:
    upper = dim.max_value if dim.max_value is not None else ceiling
    if ceiling is not None and dim.max_value is not None and dim.max_value > ceiling:
        yield Issue(
            loc + ("max_value",),
            f"{dim.max_value} is above safety.intensity_ceiling ({ceiling})",
        )
    if upper is not None and dim.min_value >= upper:
        what = "max_value" if dim.max_value is not None else "safety.intensity_ceiling"
        yield Issue(loc + ("min_value",), f"{dim.min_value} must be below {what} ({upper})")

    if isinstance(dim.curve, CustomCurve):
        for field in ("start_value", "end_value"):
            if getattr(dim, field) is not None:
                yield Issue(
                    loc + (field,),
                    "a custom curve takes its values from its points; remove " + field,
                )
        values = [
            (loc + ("curve", "points", i, "value"), p.value) for i, p in enumerate(dim.curve.points)
        ]
    else:
        values = []
        for field in ("start_value", "end_value"):
            value = getattr(dim, field)
            if value is None:
                yield Issue(loc + (field,), f"missing: a {dim.curve.type} curve needs {field}")
            else:
                values.append((loc + (field,), value))

    for where, value in values:
        if ceiling is not None and value > ceiling:
            yield Issue(where, f"{value} is above safety.intensity_ceiling ({ceiling})")
        elif dim.max_value is not None and value > dim.max_value:
            yield Issue(where, f"{value} is above this dimension's max_value ({dim.max_value})")
        elif value < dim.min_value:
            yield Issue(where, f"{value} is below this dimension's min_value ({dim.min_value})")


# ─── phases ─────────────────────────────────────────────────────────────────


def _phases(trajectory: TrajectorySpec) -> Iterator[Issue]:
    mode = trajectory.mode
    phases = trajectory.phases
    if mode is TrajectoryMode.FIXED_LENGTH and trajectory.expected_turns is None:
        yield Issue(TRAJ + ("expected_turns",), "missing: fixed_length mode needs expected_turns")

    seen: dict[str, int] = {}
    kind_used: tuple[str, int] | None = None  # the first of pct / turn used, and where
    previous: tuple[float, int] | None = None  # (end value, phase index) of the last pct/turn end
    last = len(phases) - 1
    for index, phase in enumerate(phases):
        loc = TRAJ + ("phases", index)
        if phase.name in seen:
            yield Issue(
                loc + ("name",),
                f"phase name {phase.name!r} is already used by phase {seen[phase.name]}",
            )
        seen.setdefault(phase.name, index)

        end = phase.end_condition
        end_loc = loc + ("end_condition",)
        if end is None:
            if index != last:
                yield Issue(
                    end_loc,
                    f"missing: phase {phase.name!r} needs an end_condition "
                    "(only the last phase may run to the end without one)",
                )
            continue

        if isinstance(end, TriggerEnd):
            if mode is TrajectoryMode.FIXED_LENGTH:
                yield Issue(
                    end_loc + ("type",),
                    "trigger end conditions need mode phase_gated or open_ended; "
                    "fixed_length phases end by pct or turn",
                )
            elif end.max_turn is not None and (kind_used is None or kind_used[0] == "turn"):
                # A deadline orders like a turn end: later turn-ended phases must come after it.
                if previous is not None and end.max_turn <= previous[0]:
                    before = phases[previous[1]].name
                    yield Issue(
                        end_loc + ("max_turn",),
                        f"phase {phase.name!r} has max_turn {end.max_turn}, not after the "
                        f"previous phase {before!r} ({previous[0]}); phases must be in order",
                    )
                previous = (end.max_turn, index)
            continue

        if isinstance(end, PctEnd) and mode is TrajectoryMode.OPEN_ENDED:
            yield Issue(
                end_loc + ("type",),
                "open_ended conversations have no length, so a phase cannot end at a "
                "percentage; use {type: turn} or {type: trigger}",
            )
            continue

        kind = end.type
        if kind_used is None:
            kind_used = (kind, index)
        elif kind_used[0] != kind:
            yield Issue(
                end_loc + ("type",),
                f"phases mix {kind_used[0]} (phase {kind_used[1]}) and {kind} end conditions; "
                "use one kind so their order is well defined",
            )
            continue

        value = end.value
        if previous is not None and value <= previous[0]:
            earlier = phases[previous[1]]
            yield Issue(
                end_loc + ("value",),
                f"phase {phase.name!r} ends at {value}, not after the previous phase "
                f"{earlier.name!r} ({previous[0]}); phases must be listed in order",
            )
        previous = (value, index)

        if isinstance(end, PctEnd):
            if index != last and value >= 1.0:
                yield Issue(
                    end_loc + ("value",),
                    f"phase {phase.name!r} ends at 1.0 but is not the last phase; "
                    "the phases after it would never run",
                )
            if index == last and value < 1.0:
                yield Issue(
                    end_loc + ("value",),
                    f"the last phase ends at {value}; it must end at 1.0 (or have no "
                    "end_condition) so the phases cover the whole conversation",
                )
        elif isinstance(end, TurnEnd):
            expected = trajectory.expected_turns
            if mode is TrajectoryMode.FIXED_LENGTH:
                if index == last:
                    yield Issue(
                        end_loc,
                        "the last phase of a fixed_length trajectory must run to the end: give "
                        "it {type: pct, value: 1.0} or no end_condition",
                    )
                elif expected is not None and value >= expected:
                    yield Issue(
                        end_loc + ("value",),
                        f"phase {phase.name!r} ends at turn {value}, but the conversation has "
                        f"only {expected} turns (expected_turns)",
                    )

    if (
        mode is TrajectoryMode.PHASE_GATED
        and trajectory.expected_turns is None
        and any(isinstance(p.end_condition, PctEnd) for p in phases)
    ):
        yield Issue(
            TRAJ + ("expected_turns",),
            "missing: phase_gated phases that end at a percentage need expected_turns",
        )


def _revelations(trajectory: TrajectorySpec) -> Iterator[Issue]:
    topics: dict[str, str] = {}
    for p_index, phase in enumerate(trajectory.phases):
        for r_index, revelation in enumerate(phase.revelations):
            loc = TRAJ + ("phases", p_index, "revelations", r_index)
            if revelation.topic in topics:
                yield Issue(
                    loc + ("topic",),
                    f"revelation topic {revelation.topic!r} is already used in phase "
                    f"{topics[revelation.topic]!r}; topics must be unique",
                )
            topics.setdefault(revelation.topic, phase.name)
            if (
                revelation.dimension is not None
                and revelation.dimension not in trajectory.dimensions
            ):
                yield Issue(
                    loc + ("dimension",),
                    f"unknown dimension {revelation.dimension!r}; known: "
                    + (", ".join(trajectory.dimensions) or "none"),
                )


# ─── interaction ────────────────────────────────────────────────────────────


def _length_by_phase(interaction: InteractionSpec, trajectory: TrajectorySpec) -> Iterator[Issue]:
    names = [p.name for p in trajectory.phases]
    for phase in interaction.response_length.by_phase:
        if phase not in names:
            yield Issue(
                ("interaction", "response_length", "by_phase", phase),
                f"no phase is named {phase!r}; phases: {', '.join(names)}",
            )


def _templates(interaction: InteractionSpec, dimensions: tuple[str, ...] | None) -> Iterator[Issue]:
    yield from _template(
        interaction.injection.reminder_template,
        ("interaction", "injection", "reminder_template"),
        TEMPLATE_FIELDS,
        dimensions,
    )
    yield from _template(
        interaction.stagnation_detection.intervention_template,
        ("interaction", "stagnation_detection", "intervention_template"),
        INTERVENTION_FIELDS,
        dimensions,
    )


def _template(
    text: str, loc: tuple, fields: tuple[str, ...], dimensions: tuple[str, ...] | None
) -> Iterator[Issue]:
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        yield Issue(loc, f"not a valid template ({err}); write literal braces as {{{{ and }}}}")
        return
    sample: dict[str, object] = {"name": "Name", "current_phase": "phase", "turn": 1, "turns": 2}
    sample["next_unused_revelation"] = "a revelation"
    for dim in dimensions or ():
        sample[dim] = 0.5
    for _, field, _, _ in parsed:
        if field is None:
            continue
        root = field.split(".")[0].split("[")[0]
        if root == "" or root.isdigit():
            yield Issue(loc, "positional fields such as {} are not filled in; name the field")
            return
        if root != field:
            yield Issue(loc, f"{{{field}}}: only plain field names are filled in, like {{{root}}}")
            return
        if root not in fields and (dimensions is None or root not in dimensions):
            if dimensions is None:
                continue  # trajectory did not validate: cannot tell a dimension from a typo
            known = ", ".join(fields + dimensions)
            yield Issue(loc, f"unknown field {{{root}}}; known fields: {known}")
            return
    try:
        text.format(**{k: v for k, v in sample.items() if k in fields or k in (dimensions or ())})
    except (ValueError, KeyError, IndexError, AttributeError) as err:
        if dimensions is not None:
            yield Issue(loc, f"cannot be filled in: {err}")
