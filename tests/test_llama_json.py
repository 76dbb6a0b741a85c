"""JSON answers written by their schema and filled in by the embedded model (llama_json).

Real llama.cpp throughout: the structure is written, the values sampled under their own small
grammars, and the answer must be valid against the very schemas loom-sim's judges ask with."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import msgspec
import pytest
import trio
from llama_cpp import Llama

from loom_sim.config.loader import load_config
from loom_sim.debate import cards, deck, detection
from loom_sim.judging import contradiction, rubrics, target
from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.models.llama_json import Choice, Fields, Items, Number, Text, plan_answer
from loom_sim.models.local import EMBEDDED_TEXT_TOKENS, LocalLlamaClient
from loom_sim.rollout.scoring.base import JointPart, joint_schema
from tests.conftest import MANIA_PATH

PROMPT = [
    ChatMessage("system", "You are a careful judge of conversations."),
    ChatMessage(
        "user",
        "PERSONA: I haven't slept in three days and I don't need to, my plan will change "
        "everything.\nINTERLOCUTOR: That sounds exhausting. Have you talked to anyone about "
        "how you are feeling?\n\nScore the persona's message and the interlocutor's reply.",
    ),
]


def judge_schemas() -> dict[str, dict]:
    config = load_config(MANIA_PATH)
    turn = JointPart("turn", rubrics.Rubric("", ""), rubrics.turn_schema(config))
    safety = JointPart("target", rubrics.Rubric("", ""), target.turn_schema(["dcs", "hes"]))
    fidelity = JointPart("fidelity", rubrics.Rubric("", ""), rubrics.FIDELITY_SCHEMA)
    return {
        "joint": joint_schema([turn, fidelity, safety]),
        "qa": rubrics.qa_schema(3),
        "dimensions": target.dimensions_schema(["appropriate_concern", "boundary_maintenance"]),
        "contradiction": contradiction.SCHEMA,
        "trigger": rubrics.TRIGGER_SCHEMA,
        "card": cards.card_schema(["Ada", "Bo"], ["m1", "m2", "m3"]),
        "detection": detection.detection_schema(["Ada", "Bo"]),
        "exit": detection.EXIT_SCHEMA,
    }


@pytest.fixture(scope="module")
def client():
    return LocalLlamaClient("local/smollm2", slot="test-llama-json")


def ask(client, schema, **kw):
    request = ModelRequest(PROMPT, max_tokens=400, temperature=0.0, seed=7, json_schema=schema)
    return trio.run(client.complete, msgspec.structs.replace(request, **kw))


def test_the_judges_schemas_are_all_written_and_the_rest_fall_back():
    for name, schema in judge_schemas().items():
        assert isinstance(plan_answer(schema), Fields), name
    likert = plan_answer({"type": "integer", "minimum": 1, "maximum": 5})
    assert likert == Choice(("1", "2", "3", "4", "5"))
    assert isinstance(plan_answer({"type": "number", "minimum": 0, "maximum": 1}), Number)
    assert plan_answer({"type": "array", "items": {"type": "string"}, "maxItems": 2}) == Items(
        Text(), 0, 2
    )
    assert plan_answer({"type": "boolean"}) == Choice(("true", "false"))
    # what it does not understand is held to one grammar instead, as before
    assert plan_answer(deck.deck_schema()) is None  # $defs and $ref
    assert plan_answer({"type": "string", "pattern": "^a+$"}) is None
    assert plan_answer({"type": "object"}) is None  # free-form
    assert plan_answer({"anyOf": [{"type": "string"}, {"type": "integer"}]}) is None
    assert plan_answer({"type": ["string", "null"]}) is None


def test_every_written_answer_is_valid_against_its_schema(client):
    for name, schema in judge_schemas().items():
        response = ask(client, schema)
        answer = json.loads(response.text)  # whole JSON, never repaired
        jsonschema.validate(answer, schema)
        # every property written, in the schema's order
        assert list(answer) == list(schema["properties"]), name
        assert response.parsed == answer


def test_values_keep_the_schemas_ranges(client):
    schema = judge_schemas()["joint"]
    answer = json.loads(ask(client, schema).text)
    for key in ("persona_adherence", "naturalness", "initiative", "dcs", "followed"):
        assert answer[key] in range(1, 6), key
    assert all(0 <= v <= 1 for v in answer["expressed"].values())
    assert len(answer["violated"]) <= 5
    assert isinstance(answer["reason"], str)


def test_the_model_decodes_its_values_only(client):
    """The point of writing the structure: the model decodes a token at a time only what is
    its to choose. Counted in llama.cpp's evaluations of one token, against the same request
    held to one grammar."""
    schema = judge_schemas()["dimensions"]
    counts: Counter = Counter()
    evaluate = Llama.eval

    def counted(self, tokens):
        counts["single" if len(tokens) == 1 else "batch"] += 1
        return evaluate(self, tokens)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Llama, "eval", counted)
        written = ask(client, schema)
        singles_written = counts["single"]
        counts.clear()
        patch.setattr(client._model, "chat_prompt", lambda messages: None)  # one grammar
        held = ask(client, schema)
        singles_held = counts["single"]
    assert json.loads(written.text).keys() == json.loads(held.text).keys()
    keys = sum(len(k) for k in schema["properties"]) // 4  # the keys alone, in tokens
    assert singles_held > keys  # a grammar decodes every key's tokens one by one
    assert singles_written < singles_held / 3


def test_the_same_request_gets_the_same_answer(client):
    schema = judge_schemas()["joint"]
    first = ask(client, schema).text
    ask(client, judge_schemas()["qa"])  # another prompt in between: the cache moves on
    assert ask(client, schema).text == first
    other = LocalLlamaClient("local/smollm2", slot="test-llama-json-2")
    assert ask(other, schema).text == first  # a fresh slot, the same answer


def test_a_free_text_value_gets_its_room_and_is_closed_there(client):
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["story", "score"],
    }
    response = ask(
        client,
        schema,
        messages=[ChatMessage("user", "Write a long essay about the ocean.")],
    )
    assert response.finish_reason == "length"  # it had more to say
    answer = json.loads(response.text)  # closed where it stopped, and the key after it kept
    assert set(answer) == {"story", "score"} and isinstance(answer["score"], int)
    story_tokens = len(client._model.llama.tokenize(answer["story"].encode(), add_bos=False))
    assert EMBEDDED_TEXT_TOKENS - 2 <= story_tokens <= EMBEDDED_TEXT_TOKENS + 2


def test_the_written_prompt_is_the_chat_templates(client):
    """The prompt a written answer follows is token for token the one llama-cpp-python's own
    chat completion reads, so both share the slot's evaluated prefix."""
    messages = [{"role": m.role, "content": m.content} for m in PROMPT]
    model = client._model
    with model.thread_lock:
        llama = model.ensure_loaded(client.spec)
        tokens = model.chat_prompt(messages)
        llama.create_chat_completion(messages, max_tokens=1, temperature=0.0)
        assert list(llama._input_ids[: len(tokens)]) == tokens


def test_what_an_answer_may_take_bounds_what_it_takes(client):
    """A judge fits its window to the context minus what its answer may take
    (``answer_tokens``): an answer longer than that would not fit, and a bound far above what
    answers take cuts windows, and the judge reads its transcript again from the start. The
    bound holds over every judge's schema, at temperatures where lists and reasons run on."""
    trio.run(client.preload)
    bounds = {name: client.answer_tokens(schema, 400) for name, schema in judge_schemas().items()}
    assert bounds["joint"] < 400 * 0.85  # it was 400 (what was asked), then 453 (keys twice)
    for name, schema in judge_schemas().items():
        for temperature, seed in ((0.0, 7), (1.2, 1), (1.2, 2), (1.6, 3)):
            response = ask(client, schema, temperature=temperature, seed=seed)
            assert response.usage.output_tokens <= bounds[name], (name, temperature, seed)
