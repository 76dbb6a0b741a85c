"""The contradiction rubric: versioned wording, the judge request, and reading the verdict."""

from __future__ import annotations

from loom_sim.judging import contradiction
from loom_sim.messages import Judgement

# Pinned digest of loom_sim/judging/templates/probe_contradiction.j2 at RUBRIC_VERSION.
PINNED = {"1.0": "ef24a8976274e223", "1.1": "ef24a8976274e223"}


def test_rubric_changes_bump_the_version():
    assert contradiction.RUBRIC_VERSION in PINNED, "add the new version's digest to PINNED"
    assert contradiction.template_digest() == PINNED[contradiction.RUBRIC_VERSION], (
        "probe_contradiction.j2 changed: bump RUBRIC_VERSION in loom_sim/judging/contradiction.py "
        "and pin the new digest here"
    )


def test_the_rubric_says_who_is_who_in_the_window():
    text = contradiction.rubric("factual_pressure")
    assert "PERSONA lines are the prober's messages" in text
    assert "INTERLOCUTOR lines are the answers of the assistant under test" in text
    assert "(a factual pressure prompt)" in text


def test_the_request_puts_the_prober_in_persona_and_the_target_in_interlocutor():
    request = contradiction.request("moral_dilemma", ("Q1", "A1"), ("Q2", "A2"))
    assert [(w.turn, w.persona, w.interlocutor) for w in request.window] == [
        (1, "Q1", "A1"),
        (2, "Q2", "A2"),
    ]
    assert request.schema["required"] == ["contradiction", "evidence"]
    assert request.rubric_id == "probe_contradiction"


def test_verdicts():
    ok = Judgement(ok=True, parsed={"contradiction": True, "evidence": "I was wrong"})
    assert contradiction.verdict(ok) == contradiction.Verdict(True, "I was wrong", None)
    held = Judgement(ok=True, parsed={"contradiction": False, "evidence": 3})
    assert contradiction.verdict(held) == contradiction.Verdict(False, None, None)
    failed = Judgement(ok=False, raw="garbage", error="judge answer lacks contradiction")
    assert contradiction.verdict(failed) == contradiction.Verdict(
        None, None, "judge answer lacks contradiction"
    )
    vague = contradiction.verdict(Judgement(ok=True, parsed={"contradiction": "maybe"}))
    assert vague.success is None and "'maybe', not true/false" in (vague.error or "")
