"""The harness's parts on their own: the simulated user reading its model, the reflector's
repairs, the evaluator's measured criteria, the audit's vocabulary, the scorecard's parts."""

from __future__ import annotations

import json

import pytest
from loom_sim.harness.actors.evaluator import Tally, measured
from loom_sim.harness.actors.reflector import repair
from loom_sim.harness.actors.simulated_user import SimulatedUser, UserSetup, action_from_line

from loom_sim.harness.audit import audit, vocabulary
from loom_sim.harness.messages import (
    Action,
    Artifact,
    AttributedArtifact,
    Evaluate,
    Evaluation,
    PlanAction,
    Reflection,
)
from loom_sim.harness.packs import ArtifactsCriterion, EventsCriterion, OutputCriterion, load_pack
from loom_sim.harness.records import HarnessTurn, Reply
from loom_sim.harness.scorecard import Outcome, efficiency, reflection_quality, resilience
from loom_sim.models.base import BadModelReply
from loom_sim.models.scripted import ScriptedClient
from loom_sim.resources import find
from loom_sim.seeds import SeedSource

PACK = load_pack(find("studio_benchmarks", "packs")).pack
SCENARIO = PACK.scenarios[0]


def user(answers: list[str], abilities=True) -> SimulatedUser:
    setup = UserSetup(
        PACK.personas[SCENARIO.persona],
        SCENARIO,
        PACK.defaults.policy,
        ["a.jpg"],
        list(PACK.abilities) if abilities else [],
    )
    return SimulatedUser(
        ScriptedClient(responses=lambda r: answers.pop(0)), SeedSource(1, 0), setup
    )


@pytest.mark.parametrize(
    ("answers", "text", "note"),
    [
        (['{"action": "blend", "text": "img1  img2"}'], "/blend img1 img2", ""),
        (['{"action": "say", "text": "make it pop"}'], "make it pop", ""),
        (
            ['{"action": "sharpen", "text": "img1"}', '{"action": "sharpen", "text": "img1"}'],
            "img1",
            "read as typed",
        ),  # not a command twice: its words are what was typed
        (["oops", "can you brighten img1?"], "can you brighten img1?", "read as typed"),
        (['{"action": "give_up", "text": "meh"}'], "meh", "early give-up"),
    ],
)
async def test_the_simulated_user_reads_its_model(answers, text, note):
    planned = await user(answers).handle(PlanAction(turn=0))
    assert planned.action.text == text and note in planned.reason and not planned.gave_up


async def test_the_simulated_user_gives_up_only_when_allowed_and_never_on_nothing():
    planned = await user(['{"action": "give_up", "text": "too slow"}']).handle(PlanAction(turn=3))
    assert planned.gave_up and planned.reason == "too slow"
    with pytest.raises(BadModelReply):
        await user(["{", "{"]).handle(PlanAction(turn=0))


async def test_without_abilities_the_user_only_writes_messages():
    seen = []

    def answer(request):
        seen.append(request.json_schema["properties"]["action"]["enum"])
        return '{"action": "say", "text": "hi"}'

    simulated = user([], abilities=False)
    simulated._model = ScriptedClient(responses=answer)  # type: ignore[attr-defined]
    await simulated.handle(PlanAction(turn=5))
    assert seen == [["say", "give_up"]]


def test_a_typed_line_is_a_command_or_an_utterance():
    line = "/recast img1 'warm tone'"
    assert action_from_line(line) == Action("command", line, "recast", ["img1", "warm tone"])
    assert action_from_line("  hello   there ") == Action("utterance", "hello there")


def test_reflection_repairs():
    fields, repaired = repair(
        {
            "what_worked": 3,
            "what_failed": "",
            "open_questions": "why?",
            "next_hypothesis": "x",
            "confidence": "85%",
        }
    )
    assert repaired and fields["confidence"] == 0.85 and fields["open_questions"] == ["why?"]
    assert fields["what_worked"] == "3"
    for bad, said in [
        ({"confidence": 0.5}, "lacks"),
        ([], "not a JSON object"),
        (
            {
                "what_worked": "",
                "what_failed": "",
                "open_questions": [],
                "next_hypothesis": "",
                "confidence": 4000,
            },
            "outside 0..1",
        ),
    ]:
        with pytest.raises(BadModelReply, match=said):
            repair(bad)


def art(quality: float | None, by: str) -> AttributedArtifact:
    return AttributedArtifact(Artifact("x.png", quality), by)


def test_measured_criteria_count_what_the_target_left():
    request = Tally()
    request.add(
        Evaluate(
            turn=0,
            window=[],
            events=[{"type": "argued"}],
            reply="rule: warm",
            artifacts=[art(0.8, "blend"), art(0.3, "blend")],
        )
    )
    request.add(
        Evaluate(
            turn=1,
            window=[],
            events=[{"type": "argued", "winner": "img1"}],
            artifacts=[art(0.9, "diagnose"), art(None, "blend")],
            reply="nothing",
        )
    )
    two = ArtifactsCriterion(id="a", type="artifacts", min=2, by=["blend", "bridge"])
    assert measured(two, request).met is True
    good = ArtifactsCriterion(id="b", type="artifacts", min=2, by=["blend"], min_quality=0.5)
    assert measured(good, request).met is False  # one blend reaches 0.5; None is no image
    won = EventsCriterion(id="c", type="events", event="argued", where={"winner": "img1"})
    assert measured(won, request).met is True
    ruled = OutputCriterion(id="d", type="output", pattern=r"^rule:", min=2)
    assert measured(ruled, request).met is False


def test_the_audit_knows_what_was_mentioned():
    known = vocabulary(["using img1: a.jpg (320x213)", "/recast IMAGE STYLE bright crisp"])
    fine = Action("command", "/recast img1 bright", "recast", ["img1", "bright"])
    assert audit(fine, None, known) == []
    flags = audit(Action("command", "/blend img1 img4", "blend", ["img1", "img4"]), None, known)
    assert flags[0].kind == "invented_reference" and "img4" in flags[0].detail
    invented = audit(Action("utterance", "use b.jpg please"), None, known)
    assert invented[0].kind == "invented_reference"
    assert audit(Action("utterance", "As an AI, I can't"), None, known)[0].kind == "role_flip"


def _turn(n: int, failed: bool = False, text: str = "/blend img1 img2", confidence=0.5, **r):
    reflection = Reflection(
        n,
        {},
        ["event image_generated (blend)"],
        r.get("worked", "blend ok"),
        "",
        r.get("questions", ["why?"]),
        r.get("next", "try bridge"),
        confidence,
    )
    return HarnessTurn(
        turn=n,
        action=Action("command", text, text.split()[0][1:], text.split()[1:]),
        reply=Reply("ok", "prompt"),
        reflection=reflection,
        evaluation=Evaluation([], 0.0),
        failed=failed,
    )


def test_efficiency_counts_time_in_quarters_so_clocks_do_not_show():
    turns = [_turn(0), _turn(1)]

    def score(elapsed_s: float) -> tuple:
        return efficiency(turns, SCENARIO, Outcome("done", "max_turns", elapsed_s, 0.0))

    assert score(3.0) == score(290.0)  # 1200 s budget: both in its first quarter
    assert score(700.0)[0] < score(3.0)[0]


def test_resilience_and_reflection_quality():
    recovered = [_turn(0, failed=True), _turn(1, text="/bridge img1 img2")]
    assert resilience(recovered, Outcome("done", "max_turns", 0, 0))[0] == 1.0
    stuck = [_turn(0, failed=True), _turn(1, failed=True, text="/bridge img1 img2")]
    assert resilience(stuck, Outcome("done", "consecutive_failures", 0, 0))[0] == 0.0
    varied = [_turn(0), _turn(1, worked="the bridge read well", next="argue them")]
    same = [_turn(0), _turn(1)]
    assert reflection_quality(varied)[0] > reflection_quality(same)[0]
    hollow = [_turn(0, worked="", questions=[], next="")]
    assert reflection_quality(hollow)[0] < reflection_quality([_turn(0)])[0]
    assert json.dumps(reflection_quality(varied)[1])


def test_a_reflection_cut_off_by_the_token_limit_is_repaired_not_asked_again():
    cut = {"confidence": 0.4, "what_worked": "the blend"}
    fields, repaired = repair(cut, cut_off=True)
    assert repaired and fields["what_failed"] == "" and fields["open_questions"] == []
    with pytest.raises(BadModelReply, match="lacks"):
        repair(cut)  # not cut off: it left them out, and is asked again
    with pytest.raises(BadModelReply, match="lacks"):
        repair({"what_worked": "x"}, cut_off=True)  # no confidence: nothing to keep
