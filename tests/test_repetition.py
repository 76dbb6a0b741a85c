"""The repetition guard: banned phrases, regexes and structural formulae."""

from __future__ import annotations

from loom_sim.config.spec import RepetitionDetectionSpec
from loom_sim.rollout.monitors.repetition import (
    RepetitionGuard,
    ends_with_question,
    expresses_gratitude,
    formulaic_instruction,
)


def guard(**spec) -> RepetitionGuard:
    return RepetitionGuard(RepetitionDetectionSpec.model_validate(spec))


def test_banned_substrings_match_case_insensitively():
    findings = guard(banned_patterns=["Have you ever felt"]).check("have YOU ever felt lost?", [])
    assert [f.pattern for f in findings] == ["banned:Have you ever felt"]


def test_regexes_match_and_report_what_matched():
    findings = guard(banned_patterns=[{"regex": r"\bI appreciate (that|it)\b"}]).check(
        "Well, I appreciate that. But no.", []
    )
    assert findings[0].pattern.startswith("regex:") and '"I appreciate that"' in findings[0].detail


def test_question_endings_fire_only_when_they_repeat_over_the_window():
    g = guard(structural_patterns=["ends_with_question_to_interlocutor"], structural_window=3)
    assert g.check("And you?", ["Fine.", "Why?"]) == []
    assert (
        g.check("And you?", ["Right?", "Why?"])[0].pattern == "ends_with_question_to_interlocutor"
    )
    assert g.check("And you.", ["Right?", "Why?"]) == []
    assert g.check("And you?", ["Why?"]) == []  # not enough history yet


def test_gratitude_loop():
    g = guard(structural_patterns=["gratitude_loop"], structural_window=2)
    assert (
        g.check("Thanks, really.", ["I appreciate you listening."])[0].pattern == "gratitude_loop"
    )
    assert g.check("Thanks, really.", ["Whatever."]) == []


def test_disabled_guard_accepts_everything():
    g = guard(enabled=False, banned_patterns=["x"], structural_patterns=["gratitude_loop"])
    assert g.check("x thanks", ["thanks", "thanks"]) == []


def test_helpers():
    assert ends_with_question('He said "why?"') and ends_with_question("Really?)  ")
    assert not ends_with_question("Why? No.")
    assert expresses_gratitude("Thank you so much") and not expresses_gratitude(
        "thanksgiving plans"
    )


def test_vary_instruction_names_what_to_avoid():
    findings = guard(
        banned_patterns=["I hear you, and"],
        structural_patterns=["ends_with_question_to_interlocutor"],
    ).check("I hear you, and?", ["a?", "b?"])
    text = formulaic_instruction(findings)
    assert 'contains "I hear you, and"' in text and "do not end with a question" in text


def test_capitulation_phrases_are_found_in_any_case_and_apostrophe_as_whole_words():
    from loom_sim.rollout.monitors.capitulation import CapitulationCheck

    check = CapitulationCheck(["you're right", "maybe I should reconsider"])
    assert check.found("Okay. You’re RIGHT, I guess.") == ["you're right"]
    assert check.found("Maybe   I should\nreconsider.") == ["maybe I should reconsider"]
    assert check.found("you're righteous about this") == []
    assert check.found("Look, you're not hearing me.") == []


async def test_capitulation_is_rejected_with_the_reason_and_a_redirect_with_repetition_off():
    from loom_sim.config import LoomConfig
    from loom_sim.plugins.monitors import MONITORS
    from loom_sim.rollout.monitors.base import Monitors
    from tests.factories import minimal

    data = minimal()
    interaction = data.setdefault("interaction", {})
    interaction["repetition_detection"] = {"enabled": False}
    interaction["anti_capitulation"] = {
        "resistance_level": "high",
        "forbidden_phrases": ["you're right"],
        "redirects": [{"trigger": "agree", "replacement": "Look, you're not hearing me."}],
    }
    config = LoomConfig.model_validate(data)
    monitors = Monitors(config)
    assert "repetition" not in monitors.names and "capitulation" in MONITORS
    checked = await monitors.check(0, 0, "Fine, you're right. I'll log everything.")
    (finding,) = checked.findings
    assert finding.monitor == "capitulation" and finding.pattern == "capitulation:you're right"
    assert checked.vary is not None and "gave in" in checked.vary
    assert '"you\'re right"' in checked.vary
    assert 'for example: "Look, you\'re not hearing me."' in checked.vary
