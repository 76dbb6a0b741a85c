"""ScriptedClient: builtins, script files, determinism, failure injection."""

from __future__ import annotations

import json

import pytest
import trio

from loom_sim.models import (
    ChatMessage,
    ModelError,
    ModelRequest,
    ModelUnavailable,
    RetriesExhausted,
    ScriptedClient,
)


def conversation(turns: int, seed: int | None = 1, last: str = "How are you?") -> ModelRequest:
    """A request with ``turns`` assistant messages already in it."""
    messages = [ChatMessage("system", "persona")]
    for i in range(turns):
        messages += [ChatMessage("user", f"user {i}"), ChatMessage("assistant", f"reply {i}")]
    messages.append(ChatMessage("user", last))
    return ModelRequest(messages=messages, seed=seed)


async def test_echo():
    reply = await ScriptedClient("scripted/echo").complete(conversation(2, last="Same words."))
    assert reply.text == "Same words."
    assert reply.usage.cost_usd == 0.0
    assert reply.usage.output_tokens == 2
    assert reply.model == "scripted/echo"


async def test_varied_is_deterministic_by_seed_and_turn():
    model = ScriptedClient("scripted/varied")
    a = (await model.complete(conversation(0, seed=1))).text
    assert a == (await model.complete(conversation(0, seed=1))).text
    assert a != (await model.complete(conversation(0, seed=2))).text
    assert a != (await model.complete(conversation(1, seed=1))).text
    texts = {
        (await model.complete(conversation(t, seed=s))).text for t in range(5) for s in range(5)
    }
    assert len(texts) == 25
    assert a[0].isupper() and a.rstrip()[-1] in ".?!"
    assert len(a.split()) >= 8


async def test_varied_is_stable_across_processes():
    """String seeding does not depend on PYTHONHASHSEED: pin one value."""
    from loom_sim.models.scripted import varied_text

    assert varied_text(1, 0) == varied_text(1, 0)
    assert varied_text(None, 0) == varied_text(0, 0)


async def test_paraphrase():
    reply = await ScriptedClient("scripted/paraphrase").complete(conversation(0, last="Dogs bark."))
    assert "dogs bark." in reply.text


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("script.yaml", "responses:\n  - first\n  - second\n  - third\n"),
        ("script.yml", "- first\n- second\n- third\n"),
        ("script.json", json.dumps({"responses": ["first", "second", "third"]})),
        ("script.txt", "first\n\nsecond\n  \nthird\n"),
    ],
)
async def test_script_files_follow_the_number_of_assistant_messages(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    model = ScriptedClient(f"scripted/{path}")
    texts = [(await model.complete(conversation(turn))).text for turn in range(5)]
    assert texts == ["first", "second", "third", "first", "second"]
    # a resumed conversation continues where it left off, whatever was called before
    fresh = ScriptedClient(f"scripted/{path}")
    assert (await fresh.complete(conversation(2))).text == "third"


async def test_structured_items_are_sent_as_json_and_parsed(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text("responses:\n  - {score: 4, why: consistent}\n")
    model = ScriptedClient(f"scripted/{path}")
    request = ModelRequest(
        messages=[ChatMessage("user", "score it")], json_schema={"type": "object"}
    )
    reply = await model.complete(request)
    assert reply.parsed == {"score": 4, "why": "consistent"}
    plain = await ScriptedClient("scripted/echo").complete(request)
    assert plain.parsed is None  # "score it" is not JSON


async def test_bad_script_files(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("responses: []\n")
    with pytest.raises(ModelError, match="holds no responses"):
        ScriptedClient(f"scripted/{empty}")
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(ModelError, match="does not parse"):
        ScriptedClient(f"scripted/{broken}")
    with pytest.raises(ModelError, match="does not exist"):
        ScriptedClient(f"scripted/{tmp_path / 'missing.txt'}")


async def test_responses_in_code_list_and_callable():
    listed = ScriptedClient(responses=["a", "b"])
    assert [(await listed.complete(conversation(t))).text for t in range(3)] == ["a", "b", "a"]
    called = ScriptedClient(responses=lambda request: f"{len(request.messages)} messages")
    assert (await called.complete(conversation(1))).text == "4 messages"


async def test_fail_on_calls_injects_failures():
    model = ScriptedClient(responses=["ok"], fail_on_calls={2, 3})
    assert (await model.complete(conversation(0))).text == "ok"
    with pytest.raises(ModelUnavailable, match="injected failure on call 2"):
        await model.complete(conversation(0))
    with pytest.raises(ModelUnavailable):
        await model.complete(conversation(0))
    assert (await model.complete(conversation(0))).text == "ok"
    assert model.calls == 4


async def test_fail_with_a_chosen_exception():
    error = RetriesExhausted("scripted/custom failed 5 attempts")
    model = ScriptedClient(responses=["ok"], fail_on_calls={1}, raise_=error)
    with pytest.raises(RetriesExhausted):
        await model.complete(conversation(0))
    by_factory = ScriptedClient(
        responses=["ok"], fail_on_calls={1}, raise_=lambda n: ModelError(f"boom {n}")
    )
    with pytest.raises(ModelError, match="boom 1"):
        await by_factory.complete(conversation(0))


async def test_latency_and_max_tokens():
    model = ScriptedClient(responses=["one two three four five"], latency_s=0.05)
    start = trio.current_time()
    reply = await model.complete(ModelRequest(messages=[ChatMessage("user", "x")], max_tokens=3))
    assert trio.current_time() - start >= 0.05
    assert reply.text == "one two three" and reply.finish_reason == "length"
