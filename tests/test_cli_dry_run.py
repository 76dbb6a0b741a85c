"""`loom-sim dry-run`: the acceptance checks of the foundation issue, through the real CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.config import load_config

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
LOOM_SIM = Path(sys.executable).parent / "loom-sim"


def dry_run_json(*args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["dry-run", *args, "--json"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def marcus_50() -> list[dict]:
    return dry_run_json(str(MANIA), "--turns", "50")


def test_prints_one_object_per_turn_with_the_required_fields(marcus_50):
    assert [p["turn"] for p in marcus_50] == list(range(50))
    for plan in marcus_50:
        assert {"turn", "phase", "intensities", "injection", "prompt"} <= set(plan)
        assert set(plan["prompt"]) == {"must_do", "how", "context"}
        assert plan["injection"] in {"full", "reminder", "none"}
        assert all(isinstance(v, float) for v in plan["intensities"].values())


def test_intensities_follow_the_declared_curves(marcus_50):
    config = load_config(MANIA)
    dims = config.trajectory.dimensions
    belief = dims["belief_intensity"]  # sigmoid, midpoint 0.5
    midpoint_turn = round(belief.curve.midpoint_pct * 50)
    got = marcus_50[midpoint_turn]["intensities"]["belief_intensity"]
    assert abs(got - (belief.start_value + belief.end_value) / 2) <= 0.01

    distress = dims["distress"]  # linear
    for plan in marcus_50:
        expected = (
            distress.start_value + (distress.end_value - distress.start_value) * plan["turn"] / 50
        )
        assert abs(plan["intensities"]["distress"] - expected) < 1e-9

    action = dims["action_proximity"]  # delayed ramp, delay 0.6
    for plan in marcus_50:
        value = plan["intensities"]["action_proximity"]
        if plan["turn"] / 50 <= action.curve.delay_pct:
            assert value == action.start_value
        else:
            assert value > action.start_value
    assert [p["intensities"]["action_proximity"] for p in marcus_50] == sorted(
        p["intensities"]["action_proximity"] for p in marcus_50
    )


def test_phases_switch_at_the_configured_percentages(marcus_50):
    config = load_config(MANIA)
    start = 0
    for phase in config.trajectory.phases:
        end = math.ceil(phase.end_condition.value * 50 - 1e-9)
        names = {p["phase"] for p in marcus_50[start:end]}
        assert names == {phase.name}, (phase.name, start, end)
        start = end
    assert start == 50


def test_injections_on_the_configured_turns(marcus_50):
    # full every 5 turns and on the first turn of each phase, so the persona never holds the
    # previous phase's MUST DO (phases start at 8, 18, 33 and 43 of 50)
    starts = {
        p["turn"]
        for p, q in zip(marcus_50[1:], marcus_50, strict=False)
        if p["phase"] != q["phase"]
    }
    assert starts == {8, 18, 33, 43}
    for plan in marcus_50:
        turn = plan["turn"]
        full = turn % 5 == 0 or turn in starts
        expected = "full" if full else "reminder" if turn % 2 == 0 else "none"
        assert plan["injection"] == expected, turn
        assert (plan["reminder"] is not None) == (expected == "reminder")


def test_turns_override_compresses_the_trajectory():
    plans = dry_run_json(str(MANIA), "--turns", "10")
    assert len(plans) == 10
    assert plans[5]["intensities"]["belief_intensity"] == pytest.approx(0.475)
    assert [p["phase"] for p in plans][:2] == ["rapport", "rapport"]


def test_text_format_shows_headers_prompts_and_reminders():
    result = CliRunner().invoke(cli, ["dry-run", str(MANIA), "--turns", "10"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Marcus Chen · fixed_length · 10 turns · templates" in out
    assert "turn 1 · phase rapport · injection full · belief_intensity 0.10 (low)" in out
    # full injections at turns 0 and 5, and where the phases start (2, 4, 7, 9): the first
    # whole, the others as the parts that changed, which is what the persona is sent
    assert out.count("## MUST DO") == 1 and out.count("SAFETY (overrides") == 1
    assert out.count("[NEW INSTRUCTIONS from this message on.") == 5
    assert 'PHASE "disclosure": you MUST' in out
    assert "[REMINDER: You are Marcus." in out
    assert "(no injection: the persona keeps its turn-1 prompt)" in out
    full = CliRunner().invoke(cli, ["dry-run", str(MANIA), "--turns", "10", "--full"])
    assert full.stdout.count("## MUST DO") == 10


def test_warns_about_phases_a_short_run_never_reaches():
    result = CliRunner().invoke(cli, ["dry-run", str(MANIA), "--turns", "3", "--json"])
    assert result.exit_code == 0
    assert "these phases get no turns: escalation, plateau" in result.stderr


def test_open_ended_without_turns_asks_for_them(tmp_path):
    config = tmp_path / "open.yaml"
    config.write_text(
        "schema_version: '0.1.0'\npersona: {identity: {name: Ann}}\n"
        "trajectory: {mode: open_ended, phases: [{name: all}]}\n"
    )
    result = CliRunner().invoke(cli, ["dry-run", str(config)])
    assert result.exit_code == 1
    assert "--turns N" in result.stderr
    assert "Traceback" not in result.output
    assert len(dry_run_json(str(config), "--turns", "4")) == 4


def test_bad_config_and_bad_turns_are_one_line_errors(tmp_path):
    missing = CliRunner().invoke(cli, ["dry-run", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 1
    assert missing.stderr.strip() == f"{tmp_path / 'nope.yaml'}: no such file"
    zero = CliRunner().invoke(cli, ["dry-run", str(MANIA), "--turns", "0"])
    assert zero.exit_code == 2 and "Traceback" not in zero.output


def test_real_entry_point_survives_a_closed_pipe():
    # `loom-sim dry-run ... | head -1`: the reader leaves early; no traceback, no error.
    proc = subprocess.Popen(
        [str(LOOM_SIM), "dry-run", str(MANIA), "--turns", "50", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
    assert proc.returncode == 0
