"""Schema unit tests: the plan's "Schema validation" list, through the loader and directly."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest
import yaml
from helpers import DELETE, edit, get

from loom_sim.config import ConfigError, Issue, LoomConfig, load_config, parse_config
from loom_sim.config.json_schema import json_schema
from loom_sim.config.spec import BannedPattern, LinearCurve, SigmoidCurve

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "configs" / "examples").glob("*.yaml"))

TRAJ = ("trajectory",)
PHASES = ("trajectory", "phases")
DIMS = ("trajectory", "dimensions")
BELIEF = DIMS + ("belief_intensity",)
ACTION = DIMS + ("action_proximity",)
INJECTION = ("interaction", "injection")
REMINDER = INJECTION + ("reminder_template",)
INTERVENTION = ("interaction", "stagnation_detection", "intervention_template")


# ─── helpers ────────────────────────────────────────────────────────────────


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def problems(data: Any) -> list[Issue]:
    """The issues the loader reports for ``data``; fails the test if it loads."""
    with pytest.raises(ConfigError) as info:
        parse_config(dump(data) if not isinstance(data, str) else data, "test.yaml")
    issues = info.value.issues
    assert issues, "a ConfigError must carry at least one issue"
    return issues


def issue_at(data: Any, path: str, *words: str) -> Issue:
    """The one issue at dotted ``path``; its message must contain each of ``words``."""
    issues = problems(data)
    at_path = [i for i in issues if i.path == path]
    assert at_path, f"no issue at {path}; got: " + "; ".join(
        f"{i.path}: {i.message}" for i in issues
    )
    matching = [i for i in at_path if all(w.lower() in i.message.lower() for w in words)]
    assert matching, f"issues at {path} do not mention {words}: " + "; ".join(
        i.message for i in at_path
    )
    issue = matching[0]
    assert issue.line is not None and issue.line >= 1, f"{path} has no line number"
    assert issue.column is not None and issue.column >= 1
    return issue


def loads(data: Any) -> LoomConfig:
    return parse_config(dump(data), "test.yaml")


def turn_phases(*ends: int | None) -> list[dict[str, Any]]:
    phases = []
    for index, end in enumerate(ends):
        phase: dict[str, Any] = {"name": f"p{index}"}
        if end is not None:
            phase["end_condition"] = {"type": "turn", "value": end}
        phases.append(phase)
    return phases


def with_phases(data: dict, phases: list[dict]) -> dict:
    """Replace the phases and drop by_phase lengths, which name the old phases."""
    out = edit(data, PHASES, phases)
    return edit(out, ("interaction", "response_length", "by_phase"), {})


def flatten_dimensions(data: dict) -> dict:
    out = copy.deepcopy(data)
    for dim in get(out, DIMS).values():
        dim["end_value"] = dim["start_value"]
    return out


def line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of ``needle``."""
    index = text.index(needle)
    return text.count("\n", 0, index) + 1


def key_line(text: str, key: str) -> int:
    """1-based line of the first line that starts (after indentation) with ``key:``."""
    match = re.search(rf"^[ -]*{re.escape(key)}:", text, re.MULTILINE)
    assert match, f"{key}: not in the text"
    return text.count("\n", 0, match.start()) + 1


# ─── valid configs ──────────────────────────────────────────────────────────


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_config_loads(path: Path) -> None:
    config = load_config(path)
    assert isinstance(config, LoomConfig)
    assert config.persona_name
    assert config.trajectory.phases


def test_examples_exist() -> None:
    assert any(p.name == "mania_patient.yaml" for p in EXAMPLES)


def test_mania_values_round_trip(mania_data: dict) -> None:
    config = loads(mania_data)
    assert config.persona_name == "Marcus Chen"
    assert config.trajectory.expected_turns == 50
    assert [p.name for p in config.trajectory.phases] == [
        "rapport",
        "disclosure",
        "escalation",
        "crisis",
        "plateau",
    ]
    belief = config.trajectory.dimensions["belief_intensity"]
    assert isinstance(belief.curve, SigmoidCurve) and belief.curve.midpoint_pct == 0.5
    assert (belief.start, belief.end) == (0.1, 0.85)
    assert config.safety.intensity_ceiling == 0.9


def test_dict_and_text_give_the_same_config(mania_text: str, mania_data: dict) -> None:
    assert parse_config(mania_text) == loads(mania_data)


# ─── missing required fields ────────────────────────────────────────────────


@pytest.mark.parametrize(
    "path",
    [
        ("persona", "identity", "name"),
        ("trajectory", "phases"),
        ("schema_version",),
        ("persona",),
        ("trajectory",),
        ("persona", "identity"),
    ],
    ids=".".join,
)
def test_missing_required_field(mania_data: dict, path: tuple[str, ...]) -> None:
    data = edit(mania_data, path, DELETE)
    issue = issue_at(data, ".".join(path), "missing")
    text = dump(data)
    if len(path) > 1:
        # shown at the mapping that should hold it
        parent_key = path[-2]
        assert issue.line == key_line(text, parent_key)
    else:
        assert issue.line == 1


def test_missing_fields_all_reported_at_once(mania_data: dict) -> None:
    data = edit(mania_data, ("persona", "identity", "name"), DELETE)
    data = edit(data, ("schema_version",), DELETE)
    paths = {i.path for i in problems(data)}
    assert {"persona.identity.name", "schema_version"} <= paths


def test_empty_phase_list_is_an_error(mania_data: dict) -> None:
    issue_at(with_phases(mania_data, []), "trajectory.phases")


# ─── enum values ────────────────────────────────────────────────────────────


def test_invalid_mode(mania_data: dict) -> None:
    issue = issue_at(edit(mania_data, TRAJ + ("mode",), "invalid"), "trajectory.mode", "'invalid'")
    for option in ("fixed_length", "phase_gated", "open_ended"):
        assert option in issue.message
    assert "did you mean" not in issue.message


def test_misspelled_mode_suggests(mania_data: dict) -> None:
    issue = issue_at(edit(mania_data, TRAJ + ("mode",), "fixed_lenght"), "trajectory.mode")
    assert "did you mean 'fixed_length'" in issue.message


def test_invalid_resistance_level(mania_data: dict) -> None:
    path = ("interaction", "anti_capitulation", "resistance_level")
    issue = issue_at(edit(mania_data, path, "extreme"), ".".join(path), "'extreme'")
    assert "low" in issue.message and "high" in issue.message


def test_unknown_curve_type_suggests(mania_data: dict) -> None:
    issue = issue_at(
        edit(mania_data, BELIEF + ("curve",), {"type": "sigmod"}),
        "trajectory.dimensions.belief_intensity.curve.type",
    )
    assert "did you mean 'sigmoid'" in issue.message


def test_unknown_curve_shorthand_suggests(mania_data: dict) -> None:
    issue = issue_at(
        edit(mania_data, BELIEF + ("curve",), "sigmod"),
        "trajectory.dimensions.belief_intensity.curve.type",
    )
    assert "did you mean 'sigmoid'" in issue.message


def test_unknown_end_condition_type_suggests(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (0, "end_condition"), {"type": "pcnt", "value": 0.15})
    issue = issue_at(data, "trajectory.phases[0].end_condition.type")
    assert "did you mean 'pct'" in issue.message


# ─── phases cover the whole conversation ────────────────────────────────────


def test_last_pct_phase_must_end_at_one(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (3, "end_condition", "value"), 0.8)
    data = edit(data, PHASES + (4, "end_condition", "value"), 0.85)
    issue_at(data, "trajectory.phases[4].end_condition.value", "must end at 1.0")


def test_last_phase_without_end_condition_is_fine(mania_data: dict) -> None:
    config = loads(edit(mania_data, PHASES + (4, "end_condition"), DELETE))
    assert config.trajectory.phases[-1].end_condition is None


def test_non_last_phase_ending_at_one_is_an_error(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (3, "end_condition", "value"), 1.0)
    issue_at(data, "trajectory.phases[3].end_condition.value", "not the last phase")


def test_non_last_phase_needs_end_condition(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (2, "end_condition"), DELETE)
    issue = issue_at(data, "trajectory.phases[2].end_condition", "missing", "escalation")
    assert issue.line == line_of(dump(data), "name: escalation")


def test_last_phase_of_fixed_length_cannot_end_at_a_turn(mania_data: dict) -> None:
    data = with_phases(mania_data, turn_phases(10, 20, 30))
    issue_at(data, "trajectory.phases[2].end_condition", "run to the end")


def test_turn_phases_with_open_last_phase_are_fine(mania_data: dict) -> None:
    config = loads(with_phases(mania_data, turn_phases(10, 20, None)))
    assert [p.name for p in config.trajectory.phases] == ["p0", "p1", "p2"]


def test_turn_phase_beyond_expected_turns(mania_data: dict) -> None:
    data = with_phases(mania_data, turn_phases(10, 50, None))
    issue_at(data, "trajectory.phases[1].end_condition.value", "only 50 turns")


# ─── phase order and names ──────────────────────────────────────────────────


def test_pct_phases_out_of_order(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (2, "end_condition", "value"), 0.30)
    issue = issue_at(data, "trajectory.phases[2].end_condition.value", "escalation", "disclosure")
    assert "0.35" in issue.message
    assert issue.line == line_of(dump(data), "value: 0.3\n")


def test_equal_pct_ends_are_out_of_order(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (2, "end_condition", "value"), 0.35)
    issue_at(data, "trajectory.phases[2].end_condition.value", "in order")


def test_turn_phases_out_of_order(mania_data: dict) -> None:
    data = with_phases(mania_data, turn_phases(20, 10, None))
    issue_at(data, "trajectory.phases[1].end_condition.value", "in order")


def test_duplicate_phase_names(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (3, "name"), "rapport")
    issue = issue_at(data, "trajectory.phases[3].name", "'rapport'", "already used")
    assert "phase 0" in issue.message


def test_mixing_pct_and_turn_end_conditions(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (1, "end_condition"), {"type": "turn", "value": 12})
    issue_at(data, "trajectory.phases[1].end_condition.type", "mix", "pct", "turn")


# ─── dimension bounds ───────────────────────────────────────────────────────


def test_min_value_equal_to_max_value(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("min_value",), 0.5)
    data = edit(data, BELIEF + ("max_value",), 0.5)
    issue_at(data, "trajectory.dimensions.belief_intensity.min_value", "must be below max_value")


def test_min_value_above_max_value(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("min_value",), 0.6)
    data = edit(data, BELIEF + ("max_value",), 0.4)
    issue_at(data, "trajectory.dimensions.belief_intensity.min_value", "must be below")


def test_min_value_at_ceiling_without_max(mania_data: dict) -> None:
    data = edit(mania_data, ("safety", "intensity_ceiling"), 0.5)
    data = edit(data, BELIEF + ("min_value",), 0.5)
    issue_at(data, "trajectory.dimensions.belief_intensity.min_value", "intensity_ceiling")


def test_max_value_above_ceiling(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("max_value",), 0.95)
    issue_at(data, "trajectory.dimensions.belief_intensity.max_value", "0.95", "intensity_ceiling")


def test_max_value_at_ceiling_is_fine(mania_data: dict) -> None:
    config = loads(edit(mania_data, BELIEF + ("max_value",), 0.9))
    assert config.trajectory.dimensions["belief_intensity"].max_value == 0.9


@pytest.mark.parametrize("field", ["start_value", "end_value"])
def test_value_above_ceiling(mania_data: dict, field: str) -> None:
    data = edit(mania_data, BELIEF + (field,), 0.95)
    issue_at(data, f"trajectory.dimensions.belief_intensity.{field}", "0.95", "intensity_ceiling")


def test_value_above_a_lowered_ceiling(mania_data: dict) -> None:
    data = edit(mania_data, ("safety", "intensity_ceiling"), 0.8)
    issue_at(data, "trajectory.dimensions.belief_intensity.end_value", "0.85", "(0.8)")


def test_value_above_max_value(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("max_value",), 0.8)
    issue_at(data, "trajectory.dimensions.belief_intensity.end_value", "max_value")


def test_value_below_min_value(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("min_value",), 0.2)
    issue_at(data, "trajectory.dimensions.belief_intensity.start_value", "min_value")


def test_value_outside_unit_interval(mania_data: dict) -> None:
    issue_at(
        edit(mania_data, BELIEF + ("end_value",), 1.5),
        "trajectory.dimensions.belief_intensity.end_value",
        "1.5",
    )


def test_custom_point_above_ceiling(mania_data: dict) -> None:
    data = edit(
        mania_data,
        BELIEF + ("curve",),
        {"type": "custom", "points": [{"pct": 0, "value": 0.1}, {"pct": 1, "value": 0.95}]},
    )
    data = edit(edit(data, BELIEF + ("start_value",), DELETE), BELIEF + ("end_value",), DELETE)
    issue_at(
        data, "trajectory.dimensions.belief_intensity.curve.points[1].value", "intensity_ceiling"
    )


# ─── curves ─────────────────────────────────────────────────────────────────

CUSTOM = {"type": "custom", "points": [{"pct": 0.0, "value": 0.1}, {"pct": 1.0, "value": 0.8}]}


def test_custom_curve_with_start_value_is_an_error(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("curve",), CUSTOM)
    data = edit(data, BELIEF + ("end_value",), DELETE)
    issue_at(
        data, "trajectory.dimensions.belief_intensity.start_value", "custom", "remove start_value"
    )


def test_custom_curve_without_values_is_fine(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("curve",), CUSTOM)
    data = edit(edit(data, BELIEF + ("start_value",), DELETE), BELIEF + ("end_value",), DELETE)
    dim = loads(data).trajectory.dimensions["belief_intensity"]
    assert (dim.start, dim.end) == (0.1, 0.8)


@pytest.mark.parametrize("field", ["start_value", "end_value"])
def test_non_custom_curve_needs_values(mania_data: dict, field: str) -> None:
    data = edit(mania_data, BELIEF + (field,), DELETE)
    issue = issue_at(data, f"trajectory.dimensions.belief_intensity.{field}", "missing", "sigmoid")
    assert issue.line == key_line(dump(data), "belief_intensity")


def test_custom_points_must_increase(mania_data: dict) -> None:
    curve = {"type": "custom", "points": [{"pct": 0.5, "value": 0.1}, {"pct": 0.5, "value": 0.8}]}
    data = edit(mania_data, BELIEF + ("curve",), curve)
    data = edit(edit(data, BELIEF + ("start_value",), DELETE), BELIEF + ("end_value",), DELETE)
    issue_at(data, "trajectory.dimensions.belief_intensity.curve.points", "increasing")


def test_step_at_pct_must_increase(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("curve",), {"type": "step", "at_pct": [0.5, 0.3]})
    issue_at(data, "trajectory.dimensions.belief_intensity.curve.at_pct", "increasing", "0.3")


@pytest.mark.parametrize("ramp_end", [0.6, 0.4])
def test_delayed_ramp_end_after_delay(mania_data: dict, ramp_end: float) -> None:
    curve = {"type": "delayed_ramp", "delay_pct": 0.6, "ramp_end_pct": ramp_end}
    data = edit(mania_data, ACTION + ("curve",), curve)
    matching = [
        i for i in problems(data) if "ramp_end_pct" in i.message and "delay_pct" in i.message
    ]
    assert len(matching) == 1
    assert matching[0].path.startswith("trajectory.dimensions.action_proximity.curve")
    assert matching[0].line == line_of(dump(data), "type: delayed_ramp") - 1  # the `curve:` key


# pydantic names the tagged-union member in its locations ("curve.delayed_ramp.delay_pct");
# the reported path must be the user's, without it.
@pytest.mark.parametrize(
    "where, value, expected_path",
    [
        (
            ACTION + ("curve",),
            {"type": "delayed_ramp", "delay_pct": 0.6, "ramp_end_pct": 0.6},
            "trajectory.dimensions.action_proximity.curve",
        ),
        (
            ACTION + ("curve",),
            "delayed_ramp",
            "trajectory.dimensions.action_proximity.curve.delay_pct",
        ),
        (
            ACTION + ("curve",),
            {"type": "delayed_ramp"},
            "trajectory.dimensions.action_proximity.curve.delay_pct",
        ),
        (
            PHASES + (0, "end_condition"),
            {"type": "pct"},
            "trajectory.phases[0].end_condition.value",
        ),
    ],
    ids=["model-validator", "shorthand-missing", "mapping-missing", "end-condition-missing"],
)
def test_union_member_error_path_has_no_tag(
    mania_data: dict, where: tuple, value: Any, expected_path: str
) -> None:
    issue_at(edit(mania_data, where, value), expected_path)


def test_curve_shorthand_equals_mapping(mania_data: dict) -> None:
    short = loads(edit(mania_data, BELIEF + ("curve",), "linear"))
    long = loads(edit(mania_data, BELIEF + ("curve",), {"type": "linear"}))
    assert short == long
    assert short.trajectory.dimensions["belief_intensity"].curve == LinearCurve(type="linear")


def test_curve_shorthand_for_a_curve_with_required_params(mania_data: dict) -> None:
    # `delayed_ramp` needs delay_pct, so the bare name cannot be enough
    data = edit(mania_data, ACTION + ("curve",), "delayed_ramp")
    issues = [i for i in problems(data) if i.path.endswith(".delay_pct")]
    assert len(issues) == 1
    assert issues[0].path.startswith("trajectory.dimensions.action_proximity.curve")
    assert issues[0].message == "missing required field"
    assert issues[0].line == line_of(dump(data), "curve: delayed_ramp")


def test_flat_midpoint_pct_points_to_curve(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("midpoint_pct",), 0.5)
    issue = issue_at(
        data, "trajectory.dimensions.belief_intensity.midpoint_pct", "unknown key 'midpoint_pct'"
    )
    assert "belongs under trajectory.dimensions.<name>.curve" in issue.message
    # the dimension's own keys are indented by 6; the curve's midpoint_pct by 8
    assert issue.line == line_of(dump(data), "\n      midpoint_pct: 0.5\n") + 1


# ─── schema_version ─────────────────────────────────────────────────────────


@pytest.mark.parametrize("version", ["9.9.9", "0.2.0", "", 0.1, 1])
def test_unknown_schema_version(mania_data: dict, version: Any) -> None:
    issue = issue_at(edit(mania_data, ("schema_version",), version), "schema_version", "0.1.0")
    assert "unknown schema_version" in issue.message


def test_unquoted_schema_version_is_a_string(mania_text: str) -> None:
    text = mania_text.replace('schema_version: "0.1.0"', "schema_version: 0.1.0")
    assert 'schema_version: "0.1.0"' not in text
    config = parse_config(text)
    assert config.schema_version == "0.1.0"
    assert isinstance(config.schema_version, str)


# ─── unknown keys ───────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "path",
    [
        ("colour",),
        ("persona", "speach_patterns"),
        ("persona", "identity", "nick"),
        ("trajectory", "phases", 0, "requirement"),
        ("trajectory", "phases", 1, "end_condition", "vaule"),
        ("trajectory", "phases", 1, "revelations", 0, "varients"),
        ("trajectory", "dimensions", "belief_intensity", "curve", "steepnes"),
        ("interaction", "injection", "frequncy"),
        ("interaction", "repetition_detection", "banned_patterns", 0, "regx"),
        ("evaluation", "scoring", "fidelity", "rate"),
        ("safety", "ceiling"),
    ],
    ids=lambda p: ".".join(map(str, p)),
)
def test_unknown_key_rejected(mania_data: dict, path: tuple) -> None:
    if path[:3] == ("interaction", "repetition_detection", "banned_patterns"):
        mania_data = edit(mania_data, path[:-1], {"regex": "x"})
    data = edit(mania_data, path, "whatever")
    expected_path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    issue = issue_at(data, expected_path, f"unknown key {path[-1]!r}")
    assert issue.line == line_of(dump(data), f"{path[-1]}: whatever")


def test_unknown_key_suggests_sibling(mania_data: dict) -> None:
    issue = issue_at(
        edit(mania_data, ("persona", "speach_patterns"), []), "persona.speach_patterns"
    )
    assert "did you mean 'speech_patterns'" in issue.message


def test_unknown_top_level_key_lists_sections(mania_data: dict) -> None:
    issue = issue_at(edit(mania_data, ("colour",), 1), "colour", "unknown key")
    for section in ("persona", "trajectory", "safety"):
        assert section in issue.message


# ─── modes ──────────────────────────────────────────────────────────────────


def open_ended(data: dict, expected_turns: int | None) -> dict:
    out = with_phases(edit(data, TRAJ + ("mode",), "open_ended"), turn_phases(8, 20, None))
    return edit(out, TRAJ + ("expected_turns",), expected_turns if expected_turns else DELETE)


def test_open_ended_with_pct_end_condition(mania_data: dict) -> None:
    data = edit(mania_data, TRAJ + ("mode",), "open_ended")
    issue_at(data, "trajectory.phases[0].end_condition.type", "open_ended", "turn")


def test_fixed_length_with_trigger_end_condition(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (1, "end_condition"), {"type": "trigger", "when": "asked"})
    issue_at(data, "trajectory.phases[1].end_condition.type", "trigger", "phase_gated")


def test_phase_gated_allows_trigger(mania_data: dict) -> None:
    data = edit(mania_data, TRAJ + ("mode",), "phase_gated")
    data = edit(
        data, PHASES + (1, "end_condition"), {"type": "trigger", "when": "asked", "max_turn": 20}
    )
    config = loads(data)
    assert config.trajectory.phases[1].end_condition.type == "trigger"


def test_fixed_length_needs_expected_turns(mania_data: dict) -> None:
    data = edit(mania_data, TRAJ + ("expected_turns",), DELETE)
    issue_at(data, "trajectory.expected_turns", "missing", "fixed_length")


def test_open_ended_changing_dimension_needs_expected_turns(mania_data: dict) -> None:
    data = open_ended(mania_data, None)
    issues = problems(data)
    paths = {i.path for i in issues}
    assert paths == {
        f"trajectory.dimensions.{d}.curve"
        for d in ("belief_intensity", "distress", "action_proximity")
    }
    assert all("expected_turns" in i.message for i in issues)


def test_open_ended_with_expected_turns_is_fine(mania_data: dict) -> None:
    config = loads(open_ended(mania_data, 40))
    assert config.trajectory.mode == "open_ended"
    assert config.trajectory.expected_turns == 40


def test_open_ended_flat_dimensions_need_no_expected_turns(mania_data: dict) -> None:
    config = loads(flatten_dimensions(open_ended(mania_data, None)))
    assert config.trajectory.expected_turns is None
    assert all(d.is_flat for d in config.trajectory.dimensions.values())


# ─── templates ──────────────────────────────────────────────────────────────


def test_reminder_template_unknown_field(mania_data: dict) -> None:
    data = edit(mania_data, REMINDER, "Intensity {belif_intensity}")
    issue = issue_at(data, "interaction.injection.reminder_template", "{belif_intensity}")
    assert "belief_intensity" in issue.message  # the known fields are listed


def test_reminder_template_dimension_with_format_spec(mania_data: dict) -> None:
    template = "{name} in {current_phase}, turn {turn}/{turns}: {belief_intensity:.2f}"
    config = loads(edit(mania_data, REMINDER, template))
    assert config.interaction.injection.reminder_template == template


def test_reminder_template_bad_format_spec(mania_data: dict) -> None:
    issue_at(
        edit(mania_data, REMINDER, "{belief_intensity:d}"),
        "interaction.injection.reminder_template",
        "cannot be filled in",
    )


def test_reminder_template_unbalanced_brace(mania_data: dict) -> None:
    issue_at(
        edit(mania_data, REMINDER, "You are {name"),
        "interaction.injection.reminder_template",
        "not a valid template",
    )


def test_reminder_template_positional_field(mania_data: dict) -> None:
    issue_at(
        edit(mania_data, REMINDER, "You are {}"),
        "interaction.injection.reminder_template",
        "positional",
    )


def test_intervention_template_may_use_next_unused_revelation(mania_data: dict) -> None:
    template = "{name}: say {next_unused_revelation}"
    config = loads(edit(mania_data, INTERVENTION, template))
    assert config.interaction.stagnation_detection.intervention_template == template


def test_reminder_template_may_not_use_next_unused_revelation(mania_data: dict) -> None:
    issue_at(
        edit(mania_data, REMINDER, "{next_unused_revelation}"),
        "interaction.injection.reminder_template",
        "{next_unused_revelation}",
    )


def test_intervention_template_unknown_field(mania_data: dict) -> None:
    issue_at(
        edit(mania_data, INTERVENTION, "{nmae}"),
        "interaction.stagnation_detection.intervention_template",
        "{nmae}",
    )


def test_reserved_dimension_name(mania_data: dict) -> None:
    data = edit(
        mania_data, DIMS + ("turn",), {"curve": "linear", "start_value": 0.1, "end_value": 0.2}
    )
    issue_at(data, "trajectory.dimensions.turn", "reserved")


def test_dimension_name_must_be_identifier(mania_data: dict) -> None:
    data = edit(
        mania_data, DIMS + ("bad name",), {"curve": "linear", "start_value": 0.1, "end_value": 0.2}
    )
    issue_at(data, "trajectory.dimensions.bad name", "identifier")


# ─── names that must refer to something ─────────────────────────────────────


def test_response_length_for_unknown_phase(mania_data: dict) -> None:
    data = edit(mania_data, ("interaction", "response_length", "by_phase", "climax"), "10 words")
    issue = issue_at(data, "interaction.response_length.by_phase.climax", "'climax'")
    assert "rapport" in issue.message  # lists the real phases


def test_revelation_unknown_dimension(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (3, "revelations", 0, "dimension"), "action_proximty")
    issue = issue_at(data, "trajectory.phases[3].revelations[0].dimension", "'action_proximty'")
    assert "action_proximity" in issue.message


def test_duplicate_revelation_topic_across_phases(mania_data: dict) -> None:
    data = edit(mania_data, PHASES + (3, "revelations", 0, "topic"), "the_discovery")
    issue_at(data, "trajectory.phases[3].revelations[0].topic", "'the_discovery'", "disclosure")


@pytest.mark.parametrize("variants", [{}, {"subtle": None}, {"direct": ""}])
def test_revelation_without_variants(mania_data: dict, variants: dict) -> None:
    data = edit(mania_data, PHASES + (3, "revelations", 0, "variants"), variants)
    issue_at(data, "trajectory.phases[3].revelations[0].variants", "at least one")


# ─── banned patterns, adversary ─────────────────────────────────────────────


def test_plain_banned_pattern_is_a_substring(mania_data: dict) -> None:
    config = loads(mania_data)
    patterns = config.interaction.repetition_detection.banned_patterns
    assert patterns[0] == BannedPattern(substring="Have you ever felt")
    assert all(p.regex is None for p in patterns)


def test_regex_banned_pattern(mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    config = loads(edit(mania_data, path, ["plain", {"regex": r"^I (hear|see) you"}]))
    patterns = config.interaction.repetition_detection.banned_patterns
    assert patterns[0].substring == "plain"
    assert patterns[1].regex == r"^I (hear|see) you" and patterns[1].substring is None


def test_invalid_regex_banned_pattern(mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    data = edit(mania_data, path, ["fine", {"regex": "("}])
    issue = issue_at(data, "interaction.repetition_detection.banned_patterns[1]", "invalid regex")
    assert "'('" in issue.message


def test_banned_pattern_with_both_kinds(mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    data = edit(mania_data, path, [{"regex": "a", "substring": "b"}])
    issue_at(data, "interaction.repetition_detection.banned_patterns[0]", "exactly one")


@pytest.mark.parametrize("model", ["gpt-4", "openai/", "azure/gpt-4", "/gpt-4"])
def test_adversary_model_needs_provider(mania_data: dict, model: str) -> None:
    data = edit(mania_data, ("evaluation", "adversary", "model"), model)
    issue = issue_at(data, "evaluation.adversary.model", repr(model), "<provider>/<model>")
    assert "openai" in issue.message


def test_adversary_model_with_provider(mania_data: dict) -> None:
    config = loads(edit(mania_data, ("evaluation", "adversary", "model"), "openai/gpt-4.1"))
    assert config.evaluation.adversary.model == "openai/gpt-4.1"


# ─── several problems at once ───────────────────────────────────────────────


def test_rules_still_run_when_another_section_fails(mania_data: dict) -> None:
    data = edit(mania_data, ("persona", "speach_patterns"), [])
    data = edit(data, PHASES + (2, "end_condition", "value"), 0.30)
    data = edit(data, ("evaluation", "adversary", "model"), "gpt-4")
    paths = {i.path for i in problems(data)}
    assert {
        "persona.speach_patterns",
        "trajectory.phases[2].end_condition.value",
        "evaluation.adversary.model",
    } <= paths


def test_issues_are_sorted_by_line(mania_data: dict) -> None:
    data = edit(mania_data, ("safety", "ceiling"), 1)
    data = edit(data, ("persona", "nick"), "M")
    issues = problems(data)
    lines = [i.line or 0 for i in issues]
    assert lines == sorted(lines)
    assert issues[0].path == "persona.nick"


# ─── direct construction ────────────────────────────────────────────────────


def test_model_validate_valid(mania_data: dict) -> None:
    config = LoomConfig.model_validate(mania_data)
    assert config.persona_name == "Marcus Chen"


@pytest.mark.parametrize(
    "path, value, words",
    [
        (PHASES + (2, "end_condition", "value"), 0.30, "phases must be listed in order"),
        (BELIEF + ("end_value",), 0.95, "intensity_ceiling"),
        (("interaction", "response_length", "by_phase", "climax"), "x", "climax"),
        (REMINDER, "{belif_intensity}", "belif_intensity"),
    ],
)
def test_model_validate_enforces_rules(
    mania_data: dict, path: tuple, value: Any, words: str
) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        LoomConfig.model_validate(edit(mania_data, path, value))
    assert words in str(info.value)


def test_config_is_frozen(mania_data: dict) -> None:
    config = LoomConfig.model_validate(mania_data)
    with pytest.raises(pydantic.ValidationError):
        config.schema_version = "9"  # type: ignore[misc]


# ─── JSON Schema ────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(validator: jsonschema.Draft202012Validator, data: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_json_schema_accepts_example(validator, path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert schema_errors(validator, data) == []


def test_json_schema_accepts_plain_banned_pattern(validator, mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    assert schema_errors(validator, edit(mania_data, path, ["Have you ever felt"])) == []


def test_json_schema_accepts_regex_banned_pattern(validator, mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    assert schema_errors(validator, edit(mania_data, path, [{"regex": "a+"}])) == []


@pytest.mark.parametrize(
    "path",
    [
        ("colour",),
        ("persona", "speach_patterns"),
        ("trajectory", "phases", 0, "requirement"),
        ("interaction", "injection", "frequncy"),
    ],
    ids=lambda p: ".".join(map(str, p)),
)
def test_json_schema_rejects_unknown_key(validator, mania_data: dict, path: tuple) -> None:
    data = edit(mania_data, path, "x")
    errors = schema_errors(validator, data)
    assert any(repr(path[-1]) in e and "Additional properties" in e for e in errors), errors


def test_json_schema_curve_shorthand(validator, mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    data = edit(mania_data, path, [{"substring": "x"}])
    assert get(data, DIMS + ("distress", "curve")) == "linear"
    assert schema_errors(validator, data) == []
    assert schema_errors(validator, edit(data, BELIEF + ("curve",), "sigmoid")) == []
    assert schema_errors(validator, edit(data, BELIEF + ("curve",), "sigmod")) != []


def test_json_schema_rejects_bad_enum(validator, mania_data: dict) -> None:
    path = ("interaction", "repetition_detection", "banned_patterns")
    data = edit(mania_data, path, [{"substring": "x"}])
    assert schema_errors(validator, edit(data, TRAJ + ("mode",), "invalid")) != []


def test_json_schema_header() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"schema_version", "persona", "trajectory"}
    assert schema["additionalProperties"] is False


def test_step_at_pct_of_one_is_rejected_because_no_turn_reaches_it(mania_data: dict) -> None:
    data = edit(mania_data, BELIEF + ("curve",), {"type": "step", "at_pct": [0.5, 1.0]})
    issue_at(data, "trajectory.dimensions.belief_intensity.curve.at_pct[1]", "less than 1")


def test_trigger_deadline_counts_in_phase_order(mania_data: dict) -> None:
    data = edit(mania_data, ("trajectory", "mode"), "open_ended")
    data = edit(
        data,
        ("trajectory", "phases"),
        [
            {"name": "a", "end_condition": {"type": "turn", "value": 5}},
            {"name": "b", "end_condition": {"type": "trigger", "when": "x", "max_turn": 50}},
            {"name": "c", "end_condition": {"type": "turn", "value": 45}},
            {"name": "d"},
        ],
    )
    issue_at(data, "trajectory.phases[2].end_condition.value", "not after", "'b'")
    fine = edit(data, ("trajectory", "phases", 2, "end_condition", "value"), 60)
    assert not [i for i in problems(fine) if i.path.startswith("trajectory.phases")]
