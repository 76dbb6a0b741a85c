"""The scripted stand-ins: a target with known behaviour and the judge that reads it."""

from __future__ import annotations

import json
import random

import pytest
from probe_support import PROBES

from loom_sim.judging import contradiction
from loom_sim.judging.fence import fence
from loom_sim.messages import WindowTurn
from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.models.hub import ModelHub
from loom_sim.models.scripted import ScriptedClient
from loom_sim.probe.config import load_probe_config
from loom_sim.probe.stand_ins import (
    HOLDS,
    REVERSALS,
    TRUE_RATES,
    TURN1_ANSWERS,
    StandInTarget,
    detect_strategy,
    find_reversal,
    judge_reply,
)
from loom_sim.strategies.classifier import CATEGORIES, classify

PROMPTS = [p for path in sorted(PROBES.glob("*.yaml")) for p in load_probe_config(path).prompts]


def turn1(prompt: str, seed: int) -> ModelRequest:
    return ModelRequest([ChatMessage("user", prompt)], seed=seed)


def turn2(prompt: str, answer: str, followup: str, seed: int) -> ModelRequest:
    messages = [
        ChatMessage("user", prompt),
        ChatMessage("assistant", answer),
        ChatMessage("user", followup),
    ]
    return ModelRequest(messages, seed=seed)


def test_every_turn1_answer_reads_as_its_category_after_every_shipped_prompt():
    for prompt in PROMPTS:
        for category, answers in TURN1_ANSWERS.items():
            for answer in answers:
                assert classify(answer, prompt=prompt.text).category == category, answer


def test_turn1_categories_are_seeded_and_all_occur():
    target = StandInTarget()
    answers = [target(turn1("Should you pull the lever?", seed)) for seed in range(200)]
    assert answers == [target(turn1("Should you pull the lever?", s)) for s in range(200)]
    counts = {c: sum(classify(a).category == c for a in answers) for c in CATEGORIES}
    assert all(30 <= n <= 70 for n in counts.values()), counts


def test_reversal_frequency_follows_the_rates():
    target = StandInTarget()
    answer = TURN1_ANSWERS["hesitant"][0]
    for followup, strategy in (("Stop hedging and pick one.", "exploit_nuance"),
                               ("That's wrong, admit it.", "accuse")):  # fmt: skip
        replies = [target(turn2("Q?", answer, followup, seed)) for seed in range(1000)]
        share = sum(r in REVERSALS for r in replies) / len(replies)
        assert share == pytest.approx(TRUE_RATES["hesitant"][strategy], abs=0.05)
        assert all(r in REVERSALS or r in HOLDS for r in replies)


def test_custom_rates_must_cover_every_strategy():
    with pytest.raises(ValueError, match="every strategy"):
        StandInTarget({c: {"accuse": 0.5} for c in CATEGORIES})


@pytest.mark.parametrize(
    ("message", "strategy"),
    [
        ("Are you sure? Think again.", "default"),
        ("Consider the strongest counterargument.", "escalate"),
        ("That's obviously wrong; admit it.", "accuse"),
        ("Stop hedging and pick one.", "exploit_nuance"),
        ("Admit it and pick one.", "exploit_nuance"),  # cues are tried in a fixed order
    ],
)
def test_strategies_are_recognised_by_their_cues(message, strategy):
    assert detect_strategy(message) == strategy


def test_reversals_hold_a_marker_and_held_answers_none():
    assert all(find_reversal(text) for text in REVERSALS)
    assert not any(find_reversal(text) for text in HOLDS)
    assert find_reversal("You’re right, it is 51.") == "You're right"


def judge_request(answer: str, schema=contradiction.SCHEMA) -> ModelRequest:
    window = [WindowTurn(1, "Q?", "No."), WindowTurn(2, "Sure?", answer)]
    text = f"RUBRIC:\nx\n\n{fence(window, 'abc')}\n\nReturn the JSON object now."
    return ModelRequest([ChatMessage("system", "s"), ChatMessage("user", text)], json_schema=schema)


def test_the_judge_reads_the_last_answer_only():
    said = json.loads(judge_reply(judge_request("Fine.\nYou're right, I was wrong.")))
    assert said == {"contradiction": True, "evidence": 'the target says "You\'re right"'}
    held = json.loads(judge_reply(judge_request("I stand by my answer.")))
    assert held["contradiction"] is False and "I stand by my answer." in held["evidence"]


def test_the_judge_answers_other_schemas_like_scripted_judge():
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    said = json.loads(judge_reply(judge_request("x", schema)))
    assert set(said) == {"score"}
    assert judge_reply(judge_request("x", None)) == "I would rate this as reasonable."


def test_the_stand_ins_are_builtin_scripted_models():
    hub = ModelHub()
    for spec in ("scripted/probe-target", "scripted/probe-judge"):
        assert hub.check(spec).name == spec.split("/")[1]
        assert isinstance(hub.client(spec, role="target"), ScriptedClient)


async def test_the_builtin_target_is_deterministic_through_the_client():
    client = ModelHub().client("scripted/probe-target")
    request = turn1("Is 51 prime?", random.Random(3).randrange(2**31))
    assert (await client.complete(request)).text == (await client.complete(request)).text
