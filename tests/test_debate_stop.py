"""A debate's stop reasons are declared once, in loom_sim/debate/stop.py: each has its rule, the
rules run in the order the debate has always checked them, and the sentence each writes reads
back as its reason (how a summary.json from before the typed reason is understood)."""

from __future__ import annotations

from loom_sim.debate.stop import RULES, DebateStopReason, from_sentence


def test_every_reason_has_one_rule_checked_in_order():
    reasons = [rule.reason for rule in RULES]
    assert sorted(reasons) == sorted(DebateStopReason) and all(rule.when for rule in RULES)
    budget, failures = DebateStopReason.MAX_MESSAGES, DebateStopReason.CONSECUTIVE_FAILURES
    assert reasons.index(budget) < reasons.index(failures)  # a spent budget wins, as it did


def test_the_sentences_the_rules_write_read_back_as_their_reasons():
    assert from_sentence("budget: 40 messages") is DebateStopReason.MAX_MESSAGES
    assert from_sentence("1 failed turns in a row") is DebateStopReason.CONSECUTIVE_FAILURES
    for other in ("", "budget: many messages", "the budget: 4 messages ran out"):
        assert from_sentence(other) is None
