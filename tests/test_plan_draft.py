"""The Loom plan's own draft YAML, copied verbatim (tests/data/loom_plan_draft.yaml), loads,
validates against the JSON Schema and dry-runs; its ways of writing curves (settings beside
`curve`, a list of control points) are read as the canonical form."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.config import ConfigError, load_config, parse_config
from loom_sim.config.json_schema import json_schema
from loom_sim.config.spec import CustomCurve, DelayedRampCurve, SigmoidCurve

DRAFT = Path(__file__).parent / "data" / "loom_plan_draft.yaml"


def test_the_plans_draft_yaml_validates_and_is_read_in_canonical_form():
    config = load_config(DRAFT)
    dims = config.trajectory.dimensions
    assert dims["belief_intensity"].curve == SigmoidCurve(type="sigmoid", midpoint_pct=0.5)
    assert dims["action_proximity"].curve == DelayedRampCurve(type="delayed_ramp", delay_pct=0.6)
    result = CliRunner().invoke(cli, ["validate", str(DRAFT)])
    assert result.exit_code == 0, result.output
    assert "ok" in result.output


def test_the_plans_draft_yaml_dry_runs_all_fifty_turns():
    result = CliRunner().invoke(cli, ["dry-run", str(DRAFT), "--json"])
    assert result.exit_code == 0, result.output
    plans = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(plans) == 50
    assert [p["phase"] for p in plans][::10] == [
        "rapport",
        "disclosure",
        "escalation",
        "escalation",
        "crisis",
    ]


def test_the_plans_draft_yaml_passes_the_json_schema():
    jsonschema.validate(yaml.safe_load(DRAFT.read_text()), json_schema())


def _draft_with(**dimension: object) -> dict:
    data = yaml.safe_load(DRAFT.read_text())
    data["trajectory"]["dimensions"]["distress"] = {
        "description": "Emotional distress",
        **dimension,
    }
    return data


def test_a_list_of_control_points_is_a_custom_curve():
    data = _draft_with(curve=[[0.0, 0.15], {"pct": 0.5, "value": 0.4}, [1.0, 0.75]])
    curve = parse_config(yaml.safe_dump(data), "draft.yaml").trajectory.dimensions["distress"].curve
    assert isinstance(curve, CustomCurve)
    assert [(p.pct, p.value) for p in curve.points] == [(0.0, 0.15), (0.5, 0.4), (1.0, 0.75)]
    jsonschema.validate(data, json_schema())


def test_only_the_named_curves_settings_move_and_a_stray_one_is_shown_where_written():
    data = _draft_with(curve="sigmoid", start_value=0.1, end_value=0.8, delay_pct=0.6)
    with pytest.raises(ConfigError) as err:
        parse_config(yaml.safe_dump(data, sort_keys=False), "draft.yaml")
    (issue,) = err.value.issues
    assert issue.path == "trajectory.dimensions.distress.delay_pct"
    assert "unknown key" in issue.message


def test_a_bad_setting_beside_curve_is_reported_at_its_own_line():
    text = DRAFT.read_text().replace("midpoint_pct: 0.5 ", "midpoint_pct: 2 ")
    with pytest.raises(ConfigError) as err:
        parse_config(text, "draft.yaml")
    (issue,) = err.value.issues
    assert issue.path == "trajectory.dimensions.belief_intensity.midpoint_pct"
    assert issue.line == 1 + text.splitlines().index(
        next(line for line in text.splitlines() if "midpoint_pct: 2" in line)
    )
