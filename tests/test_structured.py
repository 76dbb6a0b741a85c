"""Structured calls: which JSON reading worked, feedback on retries, more room after a cut-off."""

from __future__ import annotations

import json

import pytest

from loom_sim.judging.structured import ask_json, require_keys
from loom_sim.models.base import ChatMessage
from loom_sim.models.json_repair import read_json
from loom_sim.models.scripted import ScriptedClient

SCHEMA = {
    "type": "object",
    "properties": {"pair": {"type": "array"}, "claim": {"type": "string"}},
    "required": ["pair", "claim"],
}


@pytest.mark.parametrize(
    ("text", "how"),
    [
        ('{"a": 1}', "whole"),
        ('```json\n{"a": 1}\n```', "fence"),
        ('Here: {"a": 1} done', "balanced"),
        ('{"a": 1, "b": "cut', "truncation"),
    ],
)
def test_read_json_says_which_reading_worked(text, how):
    assert read_json(text).how == how


def _needs_claim(value):
    value = require_keys(SCHEMA)(value)
    if not value["claim"].endswith("."):
        raise ValueError("the claim must be a whole sentence ending with a full stop")
    return value


async def test_a_refused_answer_is_shown_back_with_its_reason():
    replies = iter(['{"pair": ["a", "b"], "claim": "x"}', '{"pair": ["a", "b"], "claim": "x."}'])
    seen = []

    def respond(request):
        seen.append(request.messages)
        return next(replies)

    model = ScriptedClient("scripted/t", responses=respond)
    answer = await ask_json(
        model,
        [ChatMessage("system", "s"), ChatMessage("user", "u")],
        schema=SCHEMA,
        validate=_needs_claim,
        seed=lambda n: n,
        feedback=True,
    )
    assert answer.ok and answer.attempts == 2 and answer.value["claim"] == "x."
    retry = seen[1]
    assert [m.role for m in retry] == ["system", "user", "assistant", "user"]
    assert "whole sentence ending with a full stop" in retry[-1].content
    assert answer.problems == ["the claim must be a whole sentence ending with a full stop"]


async def test_a_cut_off_reply_that_does_not_validate_gets_more_room():
    full = json.dumps({"pair": ["a", "b"], "claim": "the barrier pays for itself soon enough."})
    budgets = []

    def respond(request):
        budgets.append(request.max_tokens)
        return full  # the scripted client cuts it at max_tokens words

    model = ScriptedClient("scripted/t", responses=respond)
    answer = await ask_json(
        model,
        [ChatMessage("user", "u")],
        schema=SCHEMA,
        validate=_needs_claim,
        seed=lambda n: n,
        max_tokens=4,
        max_attempts=3,
    )
    assert budgets == [4, 8, 16]
    assert answer.ok and answer.reading == "whole" and answer.attempts == 3


async def test_a_cut_off_reply_that_validates_is_kept_and_says_it_was_repaired():
    cut = '{"pair": ["a", "b"], "claim": "ok.", "x": "y z'
    model = ScriptedClient("scripted/t", responses=[cut])
    answer = await ask_json(
        model, [ChatMessage("user", "u")], schema=SCHEMA, validate=_needs_claim, seed=lambda n: n
    )
    assert answer.ok and answer.reading == "truncation" and answer.value["x"] == "y z"


async def test_no_usable_answer_is_a_failure_with_every_reason():
    model = ScriptedClient("scripted/t", responses=["no json here"])
    answer = await ask_json(
        model,
        [ChatMessage("user", "u")],
        schema=SCHEMA,
        validate=_needs_claim,
        seed=lambda n: n,
        max_attempts=2,
    )
    assert not answer.ok and answer.value is None and len(answer.problems) == 2
    assert "replied with none that could be read" in answer.error


async def test_a_cut_off_list_keeps_its_complete_findings_and_drops_the_half_written_one():
    cut = '{"found": [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5'

    def complete(value):
        if any(set(item) != {"a", "b"} for item in value["found"]):
            raise ValueError("every finding needs a and b")
        return value["found"]

    answer = await ask_json(
        ScriptedClient("scripted/t", responses=[cut]),
        [ChatMessage("user", "u")],
        schema={"type": "object"},
        validate=complete,
        seed=lambda n: n,
        complete_part=lambda v: {**v, "found": v["found"][:-1]},
    )
    assert answer.ok and answer.value == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    whole = '{"found": [{"a": 1, "b": 2}, {"a": 5}]}'  # not cut off: refused, not trimmed
    answer = await ask_json(
        ScriptedClient("scripted/t", responses=[whole]),
        [ChatMessage("user", "u")],
        schema={"type": "object"},
        validate=complete,
        seed=lambda n: n,
        max_attempts=1,
        complete_part=lambda v: {**v, "found": v["found"][:-1]},
    )
    assert not answer.ok and answer.error == "every finding needs a and b"
