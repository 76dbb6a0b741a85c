"""Harness sessions against real programs in real pseudo-terminals, with scripted models: every
stop reason on purpose, misbehaving targets, reflections that break their schema, the audit."""

from __future__ import annotations

import json

import pytest

from loom_sim.harness.records import TURN_DECODER
from tests.harness_support import (
    by_turn,
    command,
    lines,
    plan,
    run_plan,
    toy_pack,
    utterance,
)

USER = "scripted/test-user"
REFLECTOR = "scripted/test-reflector"


def run_toy(tmp_path, answers, *, reflector=None, **pack_options):
    pack = toy_pack(tmp_path, **pack_options)
    roles = {"user": USER}
    custom = {USER: by_turn(answers)}
    if reflector is not None:
        roles["reflector"] = REFLECTOR
        custom[REFLECTOR] = reflector
    made = plan(pack, tmp_path / "run", roles=roles)
    [brief] = run_plan(made, custom)
    return brief, made.sessions[0].bundle.dir


def turns(bundle):
    return [
        TURN_DECODER.decode(line) for line in (bundle / "turns.jsonl").read_bytes().splitlines()
    ]


def test_success_when_every_criterion_is_met(tmp_path):
    brief, bundle = run_toy(tmp_path, [command("make"), command("make")])
    assert (brief["status"], brief["stop_reason"], brief["turns"]) == ("done", "success", 2)
    assert brief["criteria"] == {"two": True} and brief["passed"]
    assert brief["cost_usd"] == 0.04  # the target's own events said so
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["components"]["artifact_quality_proxy"]["images"] == 2


def test_max_turns(tmp_path):
    brief, _ = run_toy(
        tmp_path,
        [utterance("hello"), utterance("again"), utterance("more")],
        budget={"max_turns": 2},
    )
    assert (brief["stop_reason"], brief["turns"]) == ("max_turns", 2)
    assert not brief["passed"]


def test_max_cost(tmp_path):
    brief, _ = run_toy(tmp_path, [command("cost")] * 5, budget={"max_cost_usd": 0.05})
    assert (brief["stop_reason"], brief["turns"]) == ("max_cost", 3)


def test_max_runtime_stops_mid_turn_and_drops_the_turn(tmp_path):
    brief, bundle = run_toy(
        tmp_path, [utterance("hi"), command("slow")], budget={"max_runtime_s": 2.0}
    )
    assert (brief["status"], brief["stop_reason"]) == ("done", "max_runtime")
    assert brief["turns"] == 1  # the slow turn was cut off, not recorded half-done
    assert len(lines(bundle / "reflections.jsonl")) == 1


def test_consecutive_failures(tmp_path):
    brief, _ = run_toy(
        tmp_path,
        [command("ok"), command("fail"), command("fail"), command("ok")],
        budget={"max_consecutive_failures": 2},
    )
    assert (brief["stop_reason"], brief["turns"], brief["failed_actions"]) == (
        "consecutive_failures",
        3,
        2,
    )


def test_a_crashing_target_ends_in_error_with_its_turns_kept(tmp_path):
    brief, bundle = run_toy(tmp_path, [command("make"), command("crash")])
    assert (brief["status"], brief["stop_reason"], brief["turns"]) == ("error", "adapter_fatal", 1)
    session = json.loads((bundle / "session.json").read_text())
    assert "exited with status 3" in session["error"] and "the toy fell over" in session["error"]
    assert not brief["passed"]
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["gate"]["no_fatal_adapter_error"]["passed"] is False
    assert len(lines(bundle / "reflections.jsonl")) == 1


def test_the_user_gives_up_by_choice_and_by_patience(tmp_path):
    quits = json.dumps({"action": "give_up", "text": "this is not for me"})
    answers = [quits, utterance("hi"), utterance("hm"), quits]
    brief, bundle = run_toy(tmp_path / "a", answers, budget={"max_turns": 6})
    assert (brief["stop_reason"], brief["turns"]) == ("user_gave_up", 3)
    early = turns(bundle)[0]  # turn 0 is too early to leave: it is said to the assistant
    assert early.action.text == "this is not for me" and "early give-up" in early.user_note
    gloomy = json.dumps(
        {
            "what_worked": "",
            "what_failed": "nothing works",
            "open_questions": [],
            "next_hypothesis": "maybe leave",
            "confidence": 0.1,
        }
    )
    brief, bundle = run_toy(
        tmp_path / "b",
        [utterance("hi")] * 9,
        reflector=lambda r: gloomy,
        persona={"patience": 2},
        budget={"max_turns": 8},
    )
    assert (brief["stop_reason"], brief["turns"]) == ("user_gave_up", 2)
    session = json.loads((bundle / "session.json").read_text())
    assert "patience ran out" in session["stop_detail"]


def test_a_misbehaving_target_still_leaves_a_readable_session(tmp_path):
    """It floods, writes bytes that are not UTF-8 with escapes, and then stops prompting."""
    answers = [command("flood"), command("bytes"), utterance("/noprompt"), utterance("still?")]
    brief, bundle = run_toy(
        tmp_path,
        answers,
        target={"idle_s": 1.0, "max_reply_chars": 4000},
        budget={"max_consecutive_failures": 5},
    )
    assert brief["turns"] == 4 and brief["status"] == "done"
    records = turns(bundle)
    assert records[0].reply.truncated and records[0].reply.received_bytes > 3_000_000
    assert records[1].reply.text == "odd \ufffd\ufffd green"
    assert records[2].reply.ended_by == "idle" and records[2].reply.text == "no prompt this time"
    for line in (bundle / "transcript.jsonl").read_text().splitlines():
        assert "\x1b" not in json.loads(line).get("text", "")


def test_a_reflection_that_breaks_its_schema_is_repaired_or_recorded_invalid(tmp_path):
    answers = iter(
        [
            "not json at all",
            '{"what_worked": "x"}',
            "[1, 2]",  # turn 0: three bad answers
            json.dumps(
                {
                    "what_worked": "made one",
                    "what_failed": "",
                    "open_questions": "is it good?",
                    "next_hypothesis": "make another",
                    "confidence": "70%",
                }
            ),  # turn 1: repairable
        ]
    )
    brief, bundle = run_toy(
        tmp_path, [command("make"), command("make")], reflector=lambda request: next(answers)
    )
    first, second = turns(bundle)
    assert (first.reflection_status, first.reflection_attempts) == ("invalid", 3)
    assert "not a JSON object" in (first.reflection_error or "")
    assert (second.reflection_status, second.reflection.confidence) == ("repaired", 0.7)
    assert second.reflection.open_questions == ["is it good?"]
    written = lines(bundle / "reflections.jsonl")
    assert [r["turn"] for r in written] == [0, 1]  # one per turn, the invalid one included
    assert list(written[0]) == [
        "turn",
        "action_taken",
        "observed_signals",
        "what_worked",
        "what_failed",
        "open_questions",
        "next_hypothesis",
        "confidence",
    ]
    assert written[0]["confidence"] == 0.0 and brief["reflections"] == {"invalid": 1, "repaired": 1}


def test_the_audit_catches_a_role_flip_an_invention_and_a_repeat(tmp_path):
    flip = utterance("Hello! How can I help you today? Here is the image you requested.")
    answers = [flip, command("make", "photo7.jpg"), command("ok"), command("ok")]
    brief, bundle = run_toy(tmp_path, answers, budget={"max_turns": 4})
    records = turns(bundle)
    assert [d.flags[0].kind for d in records[0].rejected] == ["role_flip"]  # asked again...
    assert [f.kind for f in records[0].audit] == ["role_flip"]  # ...and flagged when taken
    assert "How can I help you" in records[0].rejected[0].text
    assert [f.kind for f in records[1].audit] == ["invented_reference"]
    assert "photo7.jpg" in records[1].audit[0].detail
    assert records[2].audit == [] and [f.kind for f in records[3].audit] == ["repeated_action"]
    assert brief["audit"]["role_flip"] == {"taken": 1, "redrafted": 1}
    assert brief["audit"]["repeated_action"]["taken"] == 1


def test_the_bundle_is_complete(tmp_path):
    brief, bundle = run_toy(tmp_path, [command("make"), utterance("nice"), command("make")])
    names = {p.name for p in bundle.iterdir()}
    assert {
        "session.json",
        "events.jsonl",
        "transcript.jsonl",
        "reflections.jsonl",
        "scorecard.json",
        "summary.json",
        "trace.jsonl",
        "session.cast",
        "turns.jsonl",
        "setup.jsonl",
        "inputs",
        "target",
    } <= names
    transcript = lines(bundle / "transcript.jsonl")
    kinds = [(r["turn"], r["kind"]) for r in transcript]
    assert kinds == [
        (None, "assistant_output"),
        (0, "command"),
        (0, "assistant_output"),
        (1, "user_input"),
        (1, "assistant_output"),
        (2, "command"),
        (2, "assistant_output"),
    ]
    assert len(lines(bundle / "reflections.jsonl")) == brief["turns"] == 3
    events = lines(bundle / "events.jsonl")
    assert [e["turn"] for e in events] == [0, 2] and events[0]["event"]["cost_usd"] == 0.02
    session = json.loads((bundle / "session.json").read_text())
    assert session["seeds"]["run"] == 5 and session["versions"]["user_prompt"]
    assert session["target"]["resolved"]["command"][-1] == str(bundle / "target")
    cast = (bundle / "session.cast").read_text().splitlines()
    assert json.loads(cast[0])["version"] == 2
    summary = json.loads((bundle / "summary.json").read_text())
    assert "elapsed" not in json.dumps(summary) and str(tmp_path) not in json.dumps(summary)


@pytest.mark.parametrize("bad", [{"max_turns": 0}, {"max_consecutive_failures": 0}])
def test_bad_budgets_are_config_errors(tmp_path, bad):
    from loom_sim.config.errors import ConfigError

    with pytest.raises(ConfigError, match="budget"):
        run_toy(tmp_path, [utterance("hi")], budget=bad)


async def _nothing() -> None:
    return None


def test_an_adapter_kind_added_from_code_validates_and_runs(tmp_path):
    """A third party's adapter: registered, it is a valid target in a pack and --target."""
    from typing import Literal

    from loom_sim.harness.targets import Exchange
    from loom_sim.plugins.adapters import ADAPTERS, AdapterKind, TargetSettings

    class ShoutSettings(TargetSettings):
        adapter: Literal["shout"] = "shout"
        volume: int = 1

    class Shout:
        def __init__(self, settings, context):
            self.settings, self.sent = settings, ""

        def describe(self):
            return {"adapter": "shout"}

        async def start(self, nursery):
            return Exchange("ready", "complete")

        async def send(self, text):
            self.sent = text

        async def receive(self):
            return Exchange(self.sent.upper() + "!" * self.settings.volume, "complete")

        async def close(self):
            await _nothing()

    kind = AdapterKind(
        name="shout",
        settings=ShoutSettings,
        open=Shout,
        shorthand=lambda address: {"volume": int(address)},
    )
    with ADAPTERS.added(kind):
        from loom_sim.harness.targets import target_from_option

        # a program named by its address offers none of the pack's abilities
        shout = ShoutSettings(volume=2, offers_abilities=False)
        assert target_from_option("shout:2", {})[1] == shout
        brief, bundle = run_toy(
            tmp_path,
            [utterance("hello"), utterance("again")],
            target={"adapter": "shout", "volume": 3},
            budget={"max_turns": 2},
        )
    assert brief["turns"] == 2
    replies = [r["text"] for r in lines(bundle / "transcript.jsonl") if r["turn"] is not None]
    assert replies == ["hello", "HELLO!!!", "again", "AGAIN!!!"]
