"""ModelHub: spec validation before any call, shared pools, provider limits, masked keys."""

from __future__ import annotations

import random

import pytest
import trio

from loom_sim.models import (
    AnthropicClient,
    ChatMessage,
    LocalLlamaClient,
    MissingAPIKey,
    ModelClient,
    ModelError,
    ModelHub,
    ModelRequest,
    ModelSpec,
    OpenAIClient,
    RetryPolicy,
    ScriptedClient,
    parse_spec,
)
from loom_sim.testing.fake_server import FakeOpenAIServer

SECRET = "sk-hub-secret-abcdef0123456789"
REQUEST = ModelRequest(messages=[ChatMessage("user", "hi")], max_tokens=16)


async def test_missing_openai_key_is_reported_before_any_call():
    hub = ModelHub(env={})
    with pytest.raises(MissingAPIKey) as caught:
        hub.check("openai/gpt-4.1")
    assert str(caught.value) == "openai/gpt-4.1 needs an API key: set OPENAI_API_KEY"
    with pytest.raises(MissingAPIKey):
        hub.client("openai/gpt-4.1")
    with pytest.raises(MissingAPIKey, match="set ANTHROPIC_API_KEY"):
        hub.check("anthropic/claude-sonnet-4")
    await hub.aclose()


async def test_an_explicit_base_url_needs_no_key():
    hub = ModelHub(env={}, base_url="http://127.0.0.1:8080/v1")
    assert hub.check("openai/gpt-4.1") == ModelSpec("openai", "gpt-4.1")
    client = hub.client("openai/gpt-4.1")
    assert isinstance(client, OpenAIClient) and client.base_url == "http://127.0.0.1:8080/v1"
    hub2 = ModelHub(env={"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    hub2.check("openai/llama3")
    hub3 = ModelHub(env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9000"})
    hub3.check("anthropic/claude-sonnet-4")
    for h in (hub, hub2, hub3):
        await h.aclose()


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("gpt-4.1", "needs a provider"),
        ("", "empty"),
        (" openai/gpt-4.1", "needs a provider"),
        ("azure/gpt-4.1", "unknown provider 'azure'"),
        ("openai/", "names no model"),
        ("local/mistral", "unknown local model"),
        ("local/missing/model.gguf", "missing/model.gguf does not exist"),
        ("scripted/nope", "unknown script"),
        ("scripted/missing.yaml", "missing.yaml does not exist"),
    ],
)
def test_bad_specs_are_rejected(spec, words):
    hub = ModelHub(env={"OPENAI_API_KEY": "k"})
    with pytest.raises(ModelError) as caught:
        hub.check(spec)
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("base_url", ["localhost:8000", "ftp://host/v1", "http://"])
def test_a_base_url_that_cannot_work_is_rejected_up_front(base_url):
    hub = ModelHub(env={}, base_url=base_url)
    with pytest.raises(ModelError, match="is not an http\\(s\\) URL"):
        hub.check("openai/gpt-4.1")
    with pytest.raises(ModelError, match="is not an http\\(s\\) URL"):
        OpenAIClient("openai/gpt-4.1", base_url=base_url, env={})


def test_good_specs(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("responses: [a, b]\n")
    hub = ModelHub(env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})
    assert hub.check("local/smollm2").provider == "local"
    assert hub.check("scripted/echo").name == "echo"
    assert hub.check(f"scripted/{script}").provider == "scripted"
    assert str(parse_spec("openai/openai/gpt-4o")) == "openai/openai/gpt-4o"  # OpenRouter style
    assert hub.check("anthropic/claude-opus-4-20250514").provider == "anthropic"


async def test_rollouts_share_http_clients_in_groups_of_eight():
    hub = ModelHub(env={"OPENAI_API_KEY": SECRET})
    clients = [hub.client("openai/gpt-4.1", rollout_index=i) for i in range(17)]
    assert all(isinstance(c, OpenAIClient) for c in clients)
    first = clients[0].http
    assert all(c.http is first for c in clients[:8])
    assert clients[8].http is not first
    assert all(c.http is clients[8].http for c in clients[8:16])
    assert clients[16].http is not clients[8].http
    # another model of the same provider and base URL shares the same pools
    assert hub.client("openai/gpt-4o-mini", rollout_index=3).http is first
    # the same spec and group: the same client
    assert hub.client("openai/gpt-4.1", rollout_index=5) is clients[0]
    other = ModelHub(env={"ANTHROPIC_API_KEY": "k"})
    anthropic = other.client("anthropic/claude-sonnet-4")
    assert isinstance(anthropic, AnthropicClient) and anthropic.http is not first
    await other.aclose()
    await hub.aclose()
    assert clients[0].http.is_closed and clients[8].http.is_closed


async def test_rollouts_per_client_is_configurable():
    hub = ModelHub(env={"OPENAI_API_KEY": "k"}, rollouts_per_client=2)
    a, b, c = (hub.client("openai/gpt-4.1", rollout_index=i) for i in range(3))
    assert a.http is b.http and c.http is not a.http
    await hub.aclose()


async def max_in_flight(limiter: trio.CapacityLimiter, work) -> int:
    """Run ``work`` while sampling how many tokens ``limiter`` has lent out."""
    peak = 0
    done = trio.Event()

    async def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, limiter.borrowed_tokens)
            await trio.sleep(0.002)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        await work()
        done.set()
    return peak


async def test_the_provider_limiter_bounds_scripted_calls():
    hub = ModelHub(provider_concurrency={"scripted": 3})
    model = hub.client("scripted/echo")
    assert isinstance(model, ScriptedClient)
    model.latency_s = 0.02

    async def work() -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(12):
                nursery.start_soon(model.complete, REQUEST)

    peak = await max_in_flight(hub.limiter("scripted"), work)
    assert peak == 3
    await hub.aclose()


async def test_the_provider_limiter_bounds_http_calls_across_rollouts():
    with FakeOpenAIServer(latency=0.03) as server:
        hub = ModelHub(
            env={},
            base_url=server.base_url,
            provider_concurrency={"openai": 4},
            rollouts_per_client=2,
            retry=RetryPolicy(rng=random.Random(0)),
        )
        clients = [hub.client("openai/gpt-4.1", rollout_index=i) for i in range(8)]

        async def work() -> None:
            async with trio.open_nursery() as nursery:
                for client in clients:
                    for _ in range(2):
                        nursery.start_soon(client.complete, REQUEST)

        peak = await max_in_flight(hub.limiter("openai"), work)
        await hub.aclose()
        assert server.stats()["by_route"]["/v1/chat/completions"] == 16
    assert peak == 4


async def test_keys_never_appear_in_reprs_or_errors():
    env = {"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET + "-a"}
    hub = ModelHub(env=env)
    shown = [repr(hub), str(hub)]
    for spec in ("openai/gpt-4.1", "anthropic/claude-sonnet-4"):
        client = hub.client(spec)
        shown += [repr(client), str(client), repr(getattr(client, "pool", None))]
        shown.append(repr(client.http))
    with FakeOpenAIServer(require_key="something-else") as server:
        wrong = ModelHub(env={"OPENAI_API_KEY": SECRET}, base_url=server.base_url)
        with pytest.raises(ModelError) as caught:
            await wrong.client("openai/gpt-4.1").complete(REQUEST)
        shown += [str(caught.value), repr(caught.value)]
        await wrong.aclose()
    await hub.aclose()
    for text in shown:
        assert SECRET not in text, text


async def test_clients_satisfy_the_protocol(tmp_path):
    hub = ModelHub(
        env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"},
        context_tokens={
            "openai/gpt-4.1": 50_000,
            "scripted/echo": 999,
        },
    )
    specs = ["openai/gpt-4.1", "anthropic/claude-sonnet-4", "scripted/echo", "local/smollm2"]
    for spec in specs:
        client = hub.client(spec)
        assert isinstance(client, ModelClient)
        assert client.spec == spec
        assert client.count_tokens("a few words here") > 0
    assert hub.client("openai/gpt-4.1").context_tokens == 50_000
    assert hub.client("scripted/echo").context_tokens == 999
    assert hub.client("anthropic/claude-sonnet-4").context_tokens == 200_000
    assert isinstance(hub.client("local/smollm2"), LocalLlamaClient)
    await hub.aclose()
    with pytest.raises(ModelError, match="already closed"):
        hub.client("scripted/echo")


async def test_hub_is_an_async_context_manager():
    async with ModelHub() as hub:
        reply = await hub.client("scripted/echo").complete(REQUEST)
    assert reply.text == "hi"
