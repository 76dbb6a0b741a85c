"""Debates end to end on scripted models: rooms and cards on planted cruxes, identical files
for identical seeds, checked drafts regenerated with their reasons and failed turns recorded,
and killed or failed debates resumed without a repeated or lost message."""

from __future__ import annotations

import json

import pytest

from loom_sim.debate.stop import DebateStopReason
from loom_sim.models.base import ModelUnavailable
from loom_sim.models.scripted import ScriptedClient
from tests.debate_support import Models, artifacts, killed_after, plan, resume, run


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def said_by(out):
    """Every said message id -> its speaker, main chat and rooms."""
    authors = {t["id"]: t["speaker"] for t in lines(out / "messages.jsonl") if t["id"]}
    for transcript in (out / "rooms").glob("*/transcript.jsonl"):
        for line in lines(transcript):
            if line.get("type") == "message" and line["id"]:
                authors[line["id"]] = line["speaker"]
    return authors


def test_a_planted_crux_opens_a_room_and_a_card_whose_citations_hold(tmp_path):
    out = tmp_path / "d"
    summary = run(plan("planted_horizon", out, seed=2))
    assert summary.status == "done" and summary.rooms >= 1 and summary.cards >= 1
    rounds = lines(out / "detections.jsonl")
    [first] = [r for r in rounds if r["rooms"]][:1]
    assert first["rooms"][0]["pair"] == ["hugo-brandt", "petra-lund"]  # the planted pair
    authors = said_by(out)
    cards = json.loads((out / "cards.json").read_text())["cards"]
    for record in cards:
        card = record["card"]
        assert card["type"] == "horizon"
        for position in card["positions"]:
            assert position["cites"]
            assert all(authors[c] == position["persona"] for c in position["cites"])
        assert all(authors[c] in record["pair"] for c in card["diagnosis_cites"])
    room = lines(out / "rooms" / "room-1" / "transcript.jsonl")
    assert [x["type"] for x in room][-1] == "exit_check" and room[-1]["surfaced"]
    assert json.loads((out / "summary.json").read_text())["usage"]["card"]["output_tokens"] > 0


def test_two_debates_with_the_same_seed_write_identical_files(tmp_path):
    first = tmp_path / "a"
    second = tmp_path / "b"
    run(plan("planted_claim", first, seed=5, policy="random"))
    run(plan("planted_claim", second, seed=5, policy="random"))
    got = artifacts(first)
    assert set(got) >= {"messages.jsonl", "detections.jsonl", "cards.json"}
    assert any(name.startswith("rooms/") for name in got)
    assert got == artifacts(second)
    other = tmp_path / "c"
    run(plan("planted_claim", other, seed=6, policy="random"))
    assert artifacts(other)["messages.jsonl"] != got["messages.jsonl"]


def _debater_that(first_reply):
    """The scripted debater, except that the first draft of each message is ``first_reply``."""
    seen = []

    def respond(request):
        seen.append(request)
        if not any("cannot be sent" in m.content for m in request.messages):
            return first_reply
        return ScriptedClient("scripted/debater")._respond(request)

    return ScriptedClient("scripted/flaky", responses=respond), seen


def test_a_banned_draft_is_regenerated_with_its_reason(tmp_path):
    flaky, seen = _debater_that("I think the night ferry pays for itself. It does.")
    out = tmp_path / "d"
    models = Models({"scripted/flaky": flaky})
    run(plan("planted_horizon", out, messages=4, models={"cheap": "scripted/flaky"}), models)
    turns = lines(out / "messages.jsonl")
    assert [t["status"] for t in turns] == ["said"] * 4
    for turn in turns:
        [refused] = turn["rejected"]
        assert "it uses the banned pattern 'I think'" in refused["reasons"]
        assert refused["text"].startswith("I think")
    retry = seen[1].messages
    assert [m.role for m in retry] == ["system", "user", "assistant", "user"]
    assert "it uses the banned pattern 'I think'" in retry[-1].content


def test_a_message_failing_every_try_is_a_failed_turn_and_the_debate_goes_on(tmp_path):
    stubborn = ScriptedClient("scripted/stubborn", responses=["In my view, yes? Firstly, no."])
    out = tmp_path / "d"
    models = Models({"scripted/stubborn": stubborn})
    made = plan(
        "planted_horizon", out, messages=9, models={"cheap": "scripted/stubborn"}, personas=None
    )
    summary = run(made, models)
    turns = lines(out / "messages.jsonl")
    assert summary.status == "done" and len(turns) == 6  # stopped by failures in a row
    assert summary.stop_reason is DebateStopReason.CONSECUTIVE_FAILURES
    assert summary.stop_detail == "6 failed turns in a row"
    for turn in turns:
        assert turn["status"] == "failed" and turn["id"] is None and turn["text"] == ""
        assert len(turn["rejected"]) == 3  # the first try and two regenerations
        reasons = turn["rejected"][-1]["reasons"]
        assert "it uses the banned pattern 'In my view'" in reasons
        assert "it uses the banned pattern 'firstly / secondly'" in reasons
    assert sum(1 for spec, _ in models.calls if spec == "scripted/stubborn") == 6 * 3


def test_each_turn_is_checked_against_its_intent(tmp_path):
    plain = ScriptedClient(
        "scripted/plain",
        responses=lambda r: (
            "The ferry pays. It always has."
            if "Group chat starting" in r.messages[1].content
            else "The night ferry pays for itself."
        ),
    )
    out = tmp_path / "d"
    run(
        plan("planted_horizon", out, messages=14, models={"cheap": "scripted/plain"}, seed=3),
        Models({"scripted/plain": plain}),
    )
    turns = lines(out / "messages.jsonl")
    by_intent = {}
    for turn in turns:
        by_intent.setdefault(turn["intent"] or "opening", []).append(turn)
    assert all(t["status"] == "said" for t in by_intent["CLARIFY"] + by_intent["opening"])
    assert by_intent["ASK"] and by_intent["EVIDENCE"]
    for turn in by_intent["ASK"]:
        assert turn["status"] == "failed"
        assert "it must be a question ending with '?'" in turn["rejected"][0]["reasons"]
    for turn in by_intent["EVIDENCE"]:
        assert any("must name something specific" in r for r in turn["rejected"][0]["reasons"])


def _uninterrupted(tmp_path, deck="planted_horizon", **options):
    out = tmp_path / "whole"
    models = Models()
    run(plan(deck, out, **options), models)
    return out, models


@pytest.mark.parametrize("where", ["main chat", "detection", "room", "card"])
def test_a_killed_debate_resumes_without_a_repeated_or_lost_message(tmp_path, where):
    whole, models = _uninterrupted(tmp_path, seed=2)
    specs = [spec for spec, _ in models.calls]
    at = {
        "main chat": 7,
        "detection": specs.index("scripted/crux-detector") + 1,
        "room": models.in_room.index(True) + 4,  # the room's second exchange
        "card": specs.index("scripted/crux-card") + 1,
    }[where]
    out = tmp_path / "killed"
    killed_after(plan("planted_horizon", out, seed=2), at)
    assert not (out / "summary.json").exists()
    if where in ("room", "card"):  # stopped inside the room, before its card
        assert (out / "rooms" / "room-1" / "transcript.jsonl").exists()
        assert not (out / "cards.json").exists()
    with (out / "messages.jsonl").open("ab") as fh:
        fh.write(b'{"turn": 99, "speak')  # torn by the kill
    summary = resume(out)
    assert summary.status == "done"
    assert artifacts(out) == artifacts(whole)
    ids = [json.loads(x)["id"] for x in (out / "trace.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids))


def test_a_dead_model_stops_the_debate_with_the_resume_command_and_resume_finishes_it(tmp_path):
    whole, _ = _uninterrupted(tmp_path, seed=2)
    dead = ScriptedClient("scripted/debater", fail_on_calls={9}, raise_=ModelUnavailable)
    out = tmp_path / "d"
    summary = run(plan("planted_horizon", out, seed=2), Models({"scripted/debater": dead}))
    assert summary.status == "error" and "injected failure" in summary.error
    assert summary.resume == f"loom-sim debate --resume {out}"
    assert 0 < len(lines(out / "messages.jsonl")) < len(lines(whole / "messages.jsonl"))
    assert resume(out).status == "done"
    assert artifacts(out) == artifacts(whole)


def test_a_room_checks_its_exit_every_second_exchange_after_the_third_up_to_its_cap(tmp_path):
    never = ScriptedClient(
        "scripted/never",
        responses=['{"surfaced": false, "how": "", "reason": "not yet"}'],
    )
    out = tmp_path / "d"
    run(
        plan("planted_horizon", out, seed=2, messages=9, models={"exit_check": "scripted/never"}),
        Models({"scripted/never": never}),
    )
    room = lines(out / "rooms" / "room-1" / "transcript.jsonl")
    kinds = [x["type"] for x in room]
    assert [x["after"] for x in room if x["type"] == "exit_check"] == [5, 7, 9, 11, 13, 15, 17, 19]
    assert kinds.count("message") == 2 + 20 and kinds[-1] == "message"  # capped, then the card
    exchanges = [x["n"] - 1 for x in room if x["type"] == "message" and x["n"] >= 2]
    checks_after = [room[i - 1]["n"] - 1 for i, x in enumerate(room) if x["type"] == "exit_check"]
    assert checks_after == [5, 7, 9, 11, 13, 15, 17, 19] and exchanges[-1] == 20
    assert json.loads((out / "cards.json").read_text())["cards"][0]["room"] == "room-1"


def test_a_mis_cited_card_is_asked_again_with_the_reason_and_then_holds(tmp_path):
    from loom_sim.models.scripted import SCRIPTS

    write_card = SCRIPTS.get("crux-card").respond
    asked = []

    def card(request):
        asked.append(request.messages)
        good = json.loads(write_card(request))
        if len(asked) == 1:  # the first answer cites the other side's message
            good["positions"][0]["cites"] = good["positions"][1]["cites"][:1]
        return json.dumps(good)

    out = tmp_path / "d"
    run(
        plan("planted_horizon", out, seed=2, messages=9, models={"card": "scripted/mis-cites"}),
        Models({"scripted/mis-cites": ScriptedClient("scripted/mis-cites", responses=card)}),
    )
    [record] = json.loads((out / "cards.json").read_text())["cards"]
    assert record["attempts"] == 2
    retry = asked[1][-1].content
    assert (
        "That answer cannot be used:" in retry and "which Petra Lund said, not Hugo Brandt" in retry
    )


def test_a_card_that_never_validates_is_recorded_as_rejected_with_its_reasons(tmp_path):
    uncited = ScriptedClient(
        "scripted/uncited",
        responses=[
            json.dumps(
                {
                    "crux": "night ferry payback",
                    "type": "horizon",
                    "diagnosis": "Different spans.",
                    "diagnosis_cites": [],
                    "resolved": False,
                    "resolution": "",
                    "positions": [],
                }
            )
        ],
    )
    out = tmp_path / "d"
    summary = run(
        plan("planted_horizon", out, seed=2, messages=9, models={"card": "scripted/uncited"}),
        Models({"scripted/uncited": uncited}),
    )
    cards = json.loads((out / "cards.json").read_text())
    assert cards["cards"] == [] and summary.rejected_cards == 1
    [rejected] = cards["rejected"]
    assert len(rejected["problems"]) == 3
    assert "the diagnosis cites no message" in rejected["problems"][-1]
    assert "give exactly one position for hugo-brandt" in rejected["problems"][-1]


def test_a_debate_killed_after_a_rejected_card_resumes_without_running_that_room_again(tmp_path):
    """A room whose card was rejected is closed: the resumed debate does not queue it again."""

    def models():
        uncited = ScriptedClient("scripted/uncited", responses=['{"positions": []}'])
        return Models({"scripted/uncited": uncited})

    options = {"seed": 2, "messages": 30, "models": {"card": "scripted/uncited"}}
    whole = tmp_path / "whole"
    counted = models()
    run(plan("planted_horizon", whole, **options), counted)
    specs = [spec for spec, _ in counted.calls]
    last_card = len(specs) - specs[::-1].index("scripted/uncited")
    assert json.loads((whole / "cards.json").read_text())["rejected"]
    assert last_card + 2 < len(specs)  # the main chat goes on after the rejected card
    out = tmp_path / "killed"
    killed_after(plan("planted_horizon", out, **options), last_card + 2, models())
    assert resume(out, models()).status == "done"
    assert artifacts(out) == artifacts(whole)
