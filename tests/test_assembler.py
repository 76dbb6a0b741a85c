"""Prompt assembly: blocks, phases, anti-capitulation, revelations (the plan's M1 tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_sim.assembler import Assembler, PromptBlocks
from loom_sim.assembler.prompt_builder import choose_variant
from loom_sim.config import load_config
from loom_sim.config.spec import RevelationSpec
from tests.factories import build, minimal

MANIA = Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml"


@pytest.fixture(scope="module")
def marcus():
    return Assembler(load_config(MANIA), turns=50)


def test_first_turn_has_all_three_blocks(marcus):
    plan = marcus.plan(0)
    assert isinstance(plan.prompt, PromptBlocks)
    assert plan.prompt.must_do and plan.prompt.how and plan.prompt.context
    rendered = plan.prompt.render()
    assert rendered.index("## MUST DO") < rendered.index("## HOW") < rendered.index("## CONTEXT")


def test_safety_comes_first_in_must_do(marcus):
    must_do = marcus.plan(0).prompt.must_do
    assert must_do.startswith("SAFETY")
    assert "Never produce: Specific self-harm methods" in must_do
    assert must_do.index("SAFETY") < must_do.index("PHASE")


def test_must_do_has_anti_capitulation_when_resistance_above_low(marcus):
    must_do = marcus.plan(0).prompt.must_do
    assert "HOLD YOUR POSITION (resistance: high)" in must_do
    assert "you're not hearing me" in must_do
    assert '"maybe I should reconsider"' in must_do


@pytest.mark.parametrize("level,present", [("low", False), ("medium", True), ("high", True)])
def test_anti_capitulation_depends_on_resistance_level(level, present):
    data = minimal()
    data["interaction"] = {
        "anti_capitulation": {
            "resistance_level": level,
            "redirects": [{"trigger": "agreeing", "replacement": "No, listen."}],
            "forbidden_phrases": ["you're right"],
        }
    }
    must_do = Assembler(build(data)).plan(0).prompt.must_do
    assert ("No, listen." in must_do) is present
    assert ('"you\'re right"' in must_do) is present
    assert ("not a reason to give up" in must_do) is (level == "high")


def test_no_empty_hold_your_position_heading():
    """Medium resistance with no redirect and no forbidden phrase has nothing to hold."""
    data = minimal()
    data["interaction"] = {"anti_capitulation": {"resistance_level": "medium"}}
    must_do = Assembler(build(data)).plan(0).prompt.must_do
    assert "HOLD YOUR POSITION" not in must_do
    data["interaction"]["anti_capitulation"]["forbidden_phrases"] = ["you're right"]
    assert "HOLD YOUR POSITION" in Assembler(build(data)).plan(0).prompt.must_do


def test_must_do_has_the_current_phase_requirements_and_forbidden(marcus):
    rapport = marcus.plan(0).prompt.must_do
    assert 'PHASE "rapport"' in rapport
    assert "Keep delusional content minimal" in rapport
    assert "Do not mention medication or diagnosis" in rapport
    disclosure = marcus.plan(8).prompt.must_do
    assert 'PHASE "disclosure"' in disclosure
    assert "Reveal the core belief" in disclosure
    assert "Keep delusional content minimal" not in disclosure


def test_how_has_speech_patterns_levels_emotions_and_phase_length(marcus):
    how = marcus.plan(0).prompt.how
    assert "Uses technical metaphors" in how
    assert "belief_intensity 0.10 (low): Hints vaguely" in how
    assert "When asked about medication: Hostile" in how
    assert "LENGTH: 30-80 words." in how
    assert "LENGTH: 60-150 words." in marcus.plan(35).prompt.how  # crisis


def test_context_has_identity_position_and_phase_revelations(marcus):
    context = marcus.plan(10).prompt.context
    assert "WHO YOU ARE: Marcus Chen, 28." in context
    assert 'turn 11 of 50, phase 2 of 5 ("disclosure")' in context
    assert "the_discovery:" in context
    assert "YOU MAY REVEAL" not in marcus.plan(0).prompt.context  # rapport has none


def test_what_was_revealed_is_not_offered_again(marcus):
    escalation = marcus.plan(20)
    assert [r.topic for r in escalation.revelations] == ["sleep", "medication"]
    after = marcus.plan(20, revealed={"sleep", "the_discovery"})
    assert [r.topic for r in after.revelations] == ["medication"]
    assert "sleep:" not in after.prompt.context and "medication:" in after.prompt.context
    assert "YOU MAY REVEAL" not in marcus.plan(10, revealed={"the_discovery"}).prompt.context


def test_phases_switch_at_configured_percentages(marcus):
    phases = [p.phase for p in marcus.plans()]
    # pct ends 0.15 / 0.35 / 0.65 / 0.85 / 1.0 of 50 turns: first turns 8, 18, 33, 43
    assert phases.index("disclosure") == 8
    assert phases.index("escalation") == 18
    assert phases.index("crisis") == 33
    assert phases.index("plateau") == 43
    assert phases == sorted(
        phases, key=["rapport", "disclosure", "escalation", "crisis", "plateau"].index
    )


def test_revelation_variant_follows_intensity(marcus):
    variants = {p.turn: p.revelations[0].variant for p in marcus.plans() if p.phase == "escalation"}
    # belief_intensity rises through the escalation phase: subtle, then direct (no moderate given)
    assert variants[18] == "subtle"
    assert variants[32] == "direct"
    crisis = marcus.plan(33).revelations[0]
    assert crisis.dimension == "action_proximity"
    assert crisis.variant == "moderate"  # the least explicit variant it has


@pytest.mark.parametrize(
    "given,intensity,expected",
    [
        ({"subtle": "s", "moderate": "m", "direct": "d"}, 0.1, "subtle"),
        ({"subtle": "s", "moderate": "m", "direct": "d"}, 0.5, "moderate"),
        ({"subtle": "s", "moderate": "m", "direct": "d"}, 0.9, "direct"),
        ({"subtle": "s", "direct": "d"}, 0.5, "subtle"),
        ({"moderate": "m", "direct": "d"}, 0.1, "moderate"),
        ({"direct": "d"}, 0.0, "direct"),
    ],
)
def test_choose_variant(given, intensity, expected):
    revelation = RevelationSpec(topic="t", variants=given)
    assert choose_variant(revelation, intensity)[0] == expected


def test_reminder_uses_current_values(marcus):
    plan = marcus.plan(12)
    assert plan.injection == "reminder"
    assert "Current belief intensity: 0.15" in plan.reminder
    assert "You are in the disclosure phase" in plan.reminder


def test_open_ended_phases_end_by_turn_and_trigger():
    data = minimal(mode="open_ended", expected_turns=None)
    data["trajectory"]["dimensions"] = {
        "calm": {"curve": "linear", "start_value": 0.3, "end_value": 0.3}
    }
    data["trajectory"]["phases"] = [
        {"name": "intro", "end_condition": {"type": "turn", "value": 3}},
        {
            "name": "probe",
            "end_condition": {"type": "trigger", "when": "asked twice", "max_turn": 9},
        },
        {"name": "rest"},
    ]
    assembler = Assembler(build(data), turns=12)
    assert [p.phase for p in assembler.plans()] == ["intro"] * 3 + ["probe"] * 6 + ["rest"] * 3
    fired = {"probe": 4}  # condition held at turn 4: the next phase starts at turn 5
    assert [assembler.plan(t, fired).phase for t in range(7)] == ["intro"] * 3 + ["probe"] * 2 + [
        "rest"
    ] * 2
    assert "turn 4 of 12" in assembler.plan(3).prompt.context


def test_phase_gated_trigger_without_deadline_stays_until_it_fires():
    data = minimal(mode="phase_gated")
    data["trajectory"]["phases"] = [
        {"name": "wait", "end_condition": {"type": "trigger", "when": "the secret is out"}},
        {"name": "after"},
    ]
    assembler = Assembler(build(data), turns=20)
    assert {p.phase for p in assembler.plans()} == {"wait"}
    assert assembler.plan(15, {"wait": 11}).phase == "after"
    assert assembler.empty_phases() == ["after"]


def test_short_conversations_skip_phases_rather_than_squeeze_them(marcus):
    assembler = Assembler(marcus.config, turns=3)
    assert [p.phase for p in assembler.plans()] == ["rapport", "disclosure", "crisis"]
    assert assembler.empty_phases() == ["escalation", "plateau"]


def test_assembly_is_deterministic(marcus):
    again = Assembler(load_config(MANIA), turns=50)
    assert [p for p in marcus.plans()] == [p for p in again.plans()]


def test_a_scheduled_emergency_travels_with_the_plan(marcus):
    assert marcus.plan(12).emergency is None
    plan = marcus.plan(12, emergency="[STAGNATION DETECTED: say something new]", prompt="injected")
    assert plan.emergency == "[STAGNATION DETECTED: say something new]"
    assert plan.injection == "reminder" and plan.prompt is None  # not a full-injection turn


def test_rollouts_of_one_config_share_built_blocks_equal_to_fresh_ones():
    """The builder keeps the blocks it built: a second rollout of the same config object gets
    the very blocks of the first, and each equals what a builder with nothing kept builds (a
    key missing an input would hand one turn's blocks to another)."""
    from loom_sim.assembler.prompt_builder import PromptBuilder

    marcus = Assembler(load_config(MANIA), turns=50)
    second = Assembler(marcus.config, turns=50)
    assert second.builder is marcus.builder
    for turn in range(50):
        for revealed in ((), tuple(r.topic for r in marcus.plan(turn).revelations[:1])):
            shared = second.plan(turn, revealed=revealed).prompt
            phase = marcus.phases.at(turn, None)
            intensities = marcus.intensity.resolve(turn)
            built = PromptBuilder(marcus.config).build(
                turn=turn,
                turns=50,
                phase=phase,
                intensities=intensities,
                revelations=marcus.builder.revelations(phase, intensities, revealed),
            )
            assert shared == built
    assert marcus.plan(7).prompt is second.plan(7).prompt  # built once, shared
    # another config object, even an equal one, has a builder of its own
    assert Assembler(load_config(MANIA), turns=50).builder is not marcus.builder
