"""A stop reason is one rule registered in loom_sim/harness/stop.py: a rule added from outside
loom-sim (here, test code), with a reason of its own, stops a real session, which records it and
its sentence; the report shows it."""

from __future__ import annotations

import json

import pytest

from loom_sim.core.stops import StopReason as CoreStopReason
from loom_sim.harness.report import write_report
from loom_sim.harness.stop import (
    RULES,
    SET_BY_SESSION,
    StopReason,
    reasons_markdown,
    rule_added,
    stop_rule,
)
from loom_sim.plugins import PluginError
from tests.harness_support import utterance
from tests.test_harness_session import run_toy


class QuietStop(CoreStopReason):
    """A plug-in's own reasons: not the harness's, a core StopReason all the same."""

    ENOUGH_SAID = "enough_said"
    MAX_TURNS = "max_turns"  # a key the harness already has
    USER_GAVE_UP = "user_gave_up"  # a key the session sets itself


def enough_said(scenario, turns, elapsed_s):
    """two turns were said"""
    if len(turns) >= 2:
        return f"{len(turns)} turns were said, which is enough"
    return None


def test_the_harness_rules_are_checked_in_todays_order_and_every_reason_is_declared():
    checked = [rule.reason for rule in RULES]
    today = [
        StopReason.SUCCESS,
        StopReason.MAX_COST,
        StopReason.MAX_RUNTIME,
        StopReason.CONSECUTIVE_FAILURES,
        StopReason.MAX_TURNS,
    ]
    assert [reason for reason in checked if reason in today] == today
    assert set(StopReason) <= set(checked) | set(SET_BY_SESSION)  # each: a rule or the session


def test_a_rule_registered_from_outside_stops_a_real_session_with_its_reason(tmp_path):
    # Checked before the turn limit, so at turn 2 it wins over max_turns (which also holds).
    with rule_added(QuietStop.ENOUGH_SAID, enough_said, order=45):
        assert "| `enough_said` | two turns were said |" in reasons_markdown()
        brief, bundle = run_toy(
            tmp_path,
            [utterance("hello"), utterance("again"), utterance("more")],
            budget={"max_turns": 2},
        )
    assert "enough_said" not in RULES and "enough_said" not in reasons_markdown()

    assert (brief["status"], brief["stop_reason"], brief["turns"]) == ("done", "enough_said", 2)
    summary = json.loads((bundle / "summary.json").read_text())
    session = json.loads((bundle / "session.json").read_text())
    assert summary["stop_reason"] == session["stop_reason"] == "enough_said"
    assert session["stop_detail"] == "2 turns were said, which is enough"
    write_report(bundle.parent)
    report = (bundle.parent / "report.md").read_text()
    assert f"| {brief['session']} | done | enough_said |" in report
    assert "enough_said ×1" in report  # the scenario's count of stop reasons


def test_a_rule_for_a_key_the_harness_already_uses_is_refused():
    with pytest.raises(PluginError, match="two harness stop rules are named 'max_turns'"):
        stop_rule(QuietStop.MAX_TURNS, order=45)(enough_said)
    with pytest.raises(PluginError, match="the session itself stops for 'user_gave_up'"):
        stop_rule(QuietStop.USER_GAVE_UP, order=45)(enough_said)
    assert all(rule.check is not enough_said for rule in RULES)
