"""AnthropicClient against the fake server's /v1/messages."""

from __future__ import annotations

import random

import msgspec
import pytest

from loom_sim.models import AnthropicClient, ChatMessage, ModelError, ModelRequest, RetryPolicy
from loom_sim.models.anthropic import OPENING_USER_TURN, to_messages_api
from loom_sim.testing.fake_server import FakeOpenAIServer

SPEC = "anthropic/claude-sonnet-4-20250514"


def fast_retry() -> RetryPolicy:
    return RetryPolicy(base_s=0.005, cap_s=0.05, rng=random.Random(0))


def conversation(**kwargs) -> ModelRequest:
    messages = [
        ChatMessage("system", "You are terse."),
        ChatMessage("user", "first part"),
        ChatMessage("user", "second part"),
        ChatMessage("assistant", "ok"),
        ChatMessage("system", "Stay in role."),
        ChatMessage("user", "and now?"),
    ]
    return ModelRequest(messages=messages, max_tokens=64, **kwargs)


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(require_key="ak-right") as running:
        yield running


def client(server, **kwargs) -> AnthropicClient:
    return AnthropicClient(
        SPEC,
        base_url=server.anthropic_base_url,
        env={"ANTHROPIC_API_KEY": "ak-right"},
        retry=fast_retry(),
        **kwargs,
    )


def test_messages_api_shape():
    system, turns = to_messages_api(conversation().messages)
    assert system == "You are terse.\n\nStay in role."
    assert [t.role for t in turns] == ["user", "assistant", "user"]
    assert turns[0].content == "first part\n\nsecond part"
    _, turns = to_messages_api([ChatMessage("assistant", "Hi, I'm your assistant.")])
    assert turns[0] == ChatMessage("user", OPENING_USER_TURN)


def test_request_body():
    model = AnthropicClient(SPEC, env={"ANTHROPIC_API_KEY": "k"})
    body = msgspec.json.decode(model._body(conversation(temperature=1.7, stop=["END"], seed=3)))
    assert body["model"] == "claude-sonnet-4-20250514"
    assert body["temperature"] == 1.0  # clamped to Anthropic's range
    assert body["stop_sequences"] == ["END"]
    assert "seed" not in body
    assert body["system"].startswith("You are terse.")
    assert model.base_url == "https://api.anthropic.com"
    assert model.context_tokens == 200_000


async def test_a_normal_call(server):
    model = client(server)
    reply = await model.complete(conversation())
    await model.aclose()
    assert reply.text == "reply 3: and now?"
    assert reply.finish_reason == "end_turn"
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens == 4
    expected = (reply.usage.input_tokens * 3.0 + reply.usage.output_tokens * 15.0) / 1e6
    assert reply.usage.cost_usd == pytest.approx(expected)  # dated snapshot → claude-sonnet-4


async def test_structured_output_through_the_system_prompt(server):
    model = client(server)
    reply = await model.complete(
        conversation(json_schema={"type": "object", "properties": {"reply": {"type": "string"}}})
    )
    await model.aclose()
    assert "```json" in reply.text  # prose and a fence: the tolerant parser found the object
    assert reply.parsed == {"reply": "reply 3: and now?", "n": 3}


async def test_overloaded_is_retried():
    with FakeOpenAIServer(fault_sequence="529,429") as server:
        model = AnthropicClient(
            SPEC, base_url=server.anthropic_base_url, env={}, retry=fast_retry()
        )
        reply = await model.complete(conversation())
        await model.aclose()
    assert reply.attempts == 3


async def test_a_rejected_key_names_the_variable(server):
    model = AnthropicClient(
        SPEC, base_url=server.anthropic_base_url, env={"ANTHROPIC_API_KEY": "ak-wrong-secret"}
    )
    with pytest.raises(ModelError) as caught:
        await model.complete(conversation())
    await model.aclose()
    assert "the key in ANTHROPIC_API_KEY was rejected" in str(caught.value)
    assert "ak-wrong-secret" not in str(caught.value)
