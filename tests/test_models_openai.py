"""OpenAIClient against the fake server: normal calls, every fault kind, fallbacks, errors."""

from __future__ import annotations

import random
import socket
import time

import pytest
import trio

from loom_sim.models import (
    ChatMessage,
    ModelError,
    ModelRequest,
    ModelUnavailable,
    OpenAIClient,
    RetriesExhausted,
    RetryPolicy,
)
from loom_sim.models._http import HTTPPool
from loom_sim.models.pricing import PriceTable
from loom_sim.testing.fake_server import FakeOpenAIServer

SCHEMA = {
    "type": "object",
    "properties": {"mood": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["mood", "score"],
}


def request(text: str = "hello there, how are you today?", **kwargs) -> ModelRequest:
    messages = [ChatMessage("system", "You are a test persona."), ChatMessage("user", text)]
    return ModelRequest(messages=messages, max_tokens=32, seed=7, **kwargs)


def fast_retry(max_attempts: int = 5) -> RetryPolicy:
    return RetryPolicy(max_attempts=max_attempts, base_s=0.005, cap_s=0.05, rng=random.Random(0))


def client(
    server: FakeOpenAIServer, spec: str = "openai/gpt-4.1", fast: bool = True, **kwargs
) -> OpenAIClient:
    """A client on its own pool: ``fast`` picks the free-list path, else httpx.AsyncClient."""
    kwargs.setdefault("retry", fast_retry())
    kwargs.setdefault("timeout_s", 5.0)
    pool = HTTPPool(server.base_url, fast=fast)
    return OpenAIClient(spec, base_url=server.base_url, env={}, pool=pool, **kwargs)


async def close(model: OpenAIClient) -> None:
    await model.pool.aclose()


@pytest.fixture(params=[True, False], ids=["fast-path", "httpx-client"])
def fast(request) -> bool:
    """Both ways of sending: the free list over httpcore and httpx.AsyncClient."""
    return request.param


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as running:
        yield running


def test_plain_http_to_loopback_takes_the_fast_path():
    assert HTTPPool("http://127.0.0.1:8000/v1").fast
    assert not HTTPPool("https://api.openai.com/v1").fast
    assert OpenAIClient("openai/x", base_url="http://127.0.0.1:1/v1", env={}).pool.fast


async def test_a_normal_call(server, fast):
    model = client(server, fast=fast)
    try:
        reply = await model.complete(request())
    finally:
        await close(model)
    assert reply.text == "reply 2: hello there, how are you today?"
    assert reply.model == "openai/gpt-4.1"
    assert reply.finish_reason == "stop"
    assert reply.attempts == 1
    assert reply.usage.input_tokens == 11  # the fake server counts words
    assert reply.usage.output_tokens == 8
    expected = (11 * 2.00 + 8 * 8.00) / 1e6  # gpt-4.1: $2 in, $8 out per million
    assert reply.usage.cost_usd == pytest.approx(expected)
    assert reply.latency_s > 0
    assert reply.parsed is None


async def test_an_unknown_model_has_unknown_cost(server):
    model = client(server, spec="openai/my-finetune")
    reply = await model.complete(request())
    await model.aclose()
    assert reply.usage.cost_usd is None
    assert reply.usage.input_tokens > 0


async def test_price_overrides_apply(server):
    prices = PriceTable({"openai/my-finetune": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}})
    model = client(server, spec="openai/my-finetune", prices=prices)
    reply = await model.complete(request())
    await model.aclose()
    total = reply.usage.input_tokens + reply.usage.output_tokens
    assert reply.usage.cost_usd == pytest.approx(total / 1e6)


async def test_json_schema_request_is_parsed(server):
    model = client(server)
    reply = await model.complete(request(json_schema=SCHEMA))
    await model.aclose()
    assert isinstance(reply.parsed, dict)
    assert set(reply.parsed) == {"mood", "score"}
    assert model.json_mode == "json_schema"


async def test_servers_without_json_schema_get_json_object_once():
    with FakeOpenAIServer(reject_json_schema=True) as server:
        model = client(server)
        first = await model.complete(request(json_schema=SCHEMA))
        second = await model.complete(request(json_schema=SCHEMA))
        await model.aclose()
        stats = server.stats()
    assert isinstance(first.parsed, dict) and isinstance(second.parsed, dict)
    assert model.json_mode == "json_object"
    # one refused json_schema request, then json_object for both calls: remembered
    assert stats["by_route"]["/v1/chat/completions"] == 3


@pytest.mark.parametrize("fault", ["429", "500", "529", "malformed", "stall"])
async def test_each_fault_is_recovered_by_retry(fault, fast):
    with FakeOpenAIServer(fault_sequence=fault, retry_after=0.05) as server:
        model = client(server, fast=fast, timeout_s=0.3)
        started = time.perf_counter()
        reply = await model.complete(request())
        elapsed = time.perf_counter() - started
        await close(model)
        stats = server.stats()
    assert reply.attempts == 2
    assert reply.text.startswith("reply 2:")
    assert stats["faults_by_kind"] == {fault: 1}
    if fault == "429":
        assert elapsed >= 0.05  # the Retry-After was honoured
    if fault == "stall":
        assert elapsed >= 0.3  # the timeout fired


async def test_fault_rate_over_fifty_calls_all_succeed(fast):
    with FakeOpenAIServer(fault_rate=0.2, seed=3, retry_after=0.01) as server:
        model = client(server, fast=fast, timeout_s=0.25, retry=fast_retry(max_attempts=6))
        replies = [await model.complete(request(f"call {i}")) for i in range(50)]
        await close(model)
        stats = server.stats()
    assert all(r.text.startswith("reply 2: call") for r in replies)
    assert stats["faults"] > 0
    assert sum(r.attempts for r in replies) == 50 + stats["faults"]


async def test_concurrent_calls_with_faults_all_succeed(fast):
    with FakeOpenAIServer(fault_rate=0.2, seed=5, faults="429,500,529,malformed") as server:
        model = client(server, fast=fast)
        results: list[str] = []

        async def one(i: int) -> None:
            results.append((await model.complete(request(f"task {i}"))).text)

        async with trio.open_nursery() as nursery:
            for i in range(40):
                nursery.start_soon(one, i)
        await close(model)
    assert sorted(results) == sorted(f"reply 2: task {i}" for i in range(40))


def client_connections(stats: dict) -> int:
    """Connections opened by clients (each ``stats()`` call opens one of its own)."""
    return stats["connections"] - stats["by_route"].get("/stats", 0)


async def test_keep_alive_connections_are_reused(server, fast):
    before = client_connections(server.stats())
    model = client(server, fast=fast)
    for _ in range(20):
        await model.complete(request())
    await close(model)
    assert client_connections(server.stats()) - before == 1


async def test_connections_the_server_closed_while_idle_are_replaced(fast):
    with FakeOpenAIServer(keepalive_timeout=0.05) as server:
        model = client(server, fast=fast)
        first = await model.complete(request())
        await trio.sleep(0.2)  # the server has closed the idle connection by now
        second = await model.complete(request())
        await close(model)
        stats = server.stats()
    assert first.attempts == second.attempts == 1
    assert client_connections(stats) == 2


async def test_cancelled_calls_leave_the_pool_usable(fast):
    with FakeOpenAIServer(latency=0.5) as server:
        model = client(server, fast=fast)
        with trio.move_on_after(0.05):
            await model.complete(request())
        assert model.pool._idle == []  # the interrupted connection was not kept
    with FakeOpenAIServer() as server:
        model = client(server, fast=fast)
        assert (await model.complete(request())).attempts == 1
        await close(model)


async def test_retries_exhausted_names_the_model_and_the_last_error():
    with FakeOpenAIServer(fault_sequence="500,500,500") as server:
        model = client(server, retry=fast_retry(max_attempts=3))
        with pytest.raises(RetriesExhausted) as caught:
            await model.complete(request())
        await model.aclose()
    message = str(caught.value)
    assert "openai/gpt-4.1" in message and "HTTP 500" in message and "3 attempts" in message


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_dead_server_is_model_unavailable_in_one_sentence(fast):
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    model = OpenAIClient(
        "openai/gpt-4.1",
        base_url=base_url,
        env={},
        pool=HTTPPool(base_url, fast=fast),
        retry=fast_retry(max_attempts=2),
    )
    with pytest.raises(ModelUnavailable) as caught:
        await model.complete(request())
    await close(model)
    message = str(caught.value)
    assert message.startswith("openai/gpt-4.1 could not be reached after 2 attempts")
    assert "connection refused" in message
    assert "\n" not in message and "Traceback" not in message and "Error(" not in message
    assert message.count(". ") == 0 and message.endswith(".")


async def test_a_rejected_key_fails_at_once_and_is_masked():
    secret = "sk-test-very-secret-0123456789"
    with FakeOpenAIServer(require_key="the-right-key") as server:
        model = OpenAIClient(
            "openai/gpt-4.1",
            base_url=server.base_url,
            env={"OPENAI_API_KEY": secret},
            retry=fast_retry(),
        )
        with pytest.raises(ModelError) as caught:
            await model.complete(request())
        await model.aclose()
        stats = server.stats()
    message = str(caught.value)
    assert "the key in OPENAI_API_KEY was rejected" in message
    assert secret not in message and secret not in repr(model)
    assert stats["by_route"]["/v1/chat/completions"] == 1  # not retried


async def test_the_right_key_is_sent():
    with FakeOpenAIServer(require_key="the-right-key") as server:
        model = OpenAIClient(
            "openai/gpt-4.1", base_url=server.base_url, env={"OPENAI_API_KEY": "the-right-key"}
        )
        reply = await model.complete(request())
        await model.aclose()
    assert reply.text.startswith("reply 2:")


async def test_a_missing_route_is_a_clear_404(server):
    model = OpenAIClient("openai/gpt-4.1", base_url=server.url + "/wrong", env={})
    with pytest.raises(ModelError, match=r"model 'gpt-4.1' not found at http://127\.0\.0\.1"):
        await model.complete(request())
    await model.aclose()


def test_base_url_from_the_environment():
    model = OpenAIClient("openai/x", env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1/"})
    assert model.base_url == "http://127.0.0.1:1/v1"
    assert OpenAIClient("openai/x", env={}).base_url == "https://api.openai.com/v1"
    assert OpenAIClient("openai/x", base_url="http://h/v1", env={}).base_url == "http://h/v1"


def test_request_body_shapes():
    """Reasoning models on OpenAI get max_completion_tokens and no temperature/stop."""
    import msgspec

    official = OpenAIClient("openai/o4-mini", env={"OPENAI_API_KEY": "k"})
    body = msgspec.json.decode(official._body(request(stop=["\n"]), "json_schema"))
    assert body["max_completion_tokens"] == 32 and "max_tokens" not in body
    assert "temperature" not in body and "stop" not in body and body["seed"] == 7

    local = OpenAIClient("openai/smollm2", base_url="http://127.0.0.1:1/v1", env={})
    body = msgspec.json.decode(local._body(request(stop=["\n"], json_schema=SCHEMA), "json_schema"))
    assert body["max_tokens"] == 32 and body["temperature"] == 0.8 and body["stop"] == ["\n"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA

    body = msgspec.json.decode(local._body(request(json_schema=SCHEMA), "none"))
    assert "response_format" not in body
    assert "JSON Schema" in body["messages"][0]["content"]
    assert body["messages"][0]["role"] == "system"
    assert len(body["messages"]) == 2


def test_which_error_replies_mean_the_format_is_not_supported():
    from loom_sim.models.openai import _refuses_format

    llama_cpp = (
        b"{\"error\":{\"message\":\"1 validation error: {'loc': ('body', 'response_format', "
        b"'type'), 'msg': \"Input should be 'text' or 'json_object'\"}\"}}"
    )
    assert _refuses_format(500, llama_cpp)  # llama-cpp-python's server
    assert _refuses_format(400, b'{"error": "response_format json_schema is not supported"}')
    assert _refuses_format(422, b'{"detail": "unknown field json_schema"}')
    assert not _refuses_format(500, b'{"error": "internal error"}')
    assert not _refuses_format(500, b'{"error": "response_format failed, out of memory"}')
    assert not _refuses_format(400, b'{"error": "context length exceeded"}')


async def test_a_server_with_a_small_context_names_the_setting_and_its_size():
    # llama.cpp's server starts with a 2,048-token context; a long conversation gets HTTP 400
    from loom_sim.models.retry import ContextOverflow

    with FakeOpenAIServer(context_tokens=300) as server:
        model = OpenAIClient("openai/llama", base_url=server.base_url, env={}, retry=fast_retry())
        assert (await model.complete(request("short"))).text
        with pytest.raises(ContextOverflow) as caught:
            await model.complete(request("word " * 400))
        await model.aclose()
        stats = server.stats()
    message = str(caught.value)
    assert caught.value.limit == 300
    assert "no longer fits the model's context" in message
    assert "models.context_tokens: {openai/llama: 300}" in message
    assert "check the model name" not in message
    assert stats["by_route"]["/v1/chat/completions"] == 2  # not retried


def test_context_overflow_is_read_from_the_usual_servers_words():
    from loom_sim.models.retry import context_overflow

    assert context_overflow(b'{"error": {"message": "bad model"}}') is None
    assert context_overflow(b"Requested tokens (3000) exceed context window of 2048") == 2048
    assert (
        context_overflow(b"This model's maximum context length is 8192 tokens. However...") == 8192
    )
    assert context_overflow(b'{"error": {"code": "context_length_exceeded"}}') == 0
