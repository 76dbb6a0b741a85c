"""An embedded model's slot holds a context only as large as its prompts need, and every slot
reads one loaded model (loom_sim/models/local.py, loom_sim/models/llama_shared.py): memory
follows use, and what the model writes is the same as with a full-size context."""

from __future__ import annotations

import pytest

from loom_sim.models import llama_slots
from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.models.local import CONTEXT_STEP, LocalLlamaClient, release_slots

STORY = "The harbour committee met again about the night ferry and its winter losses. " * 100


def _request(*extra: str) -> ModelRequest:
    messages = [ChatMessage("system", "You are a careful note taker."), ChatMessage("user", "Hi")]
    messages += [ChatMessage("user", text) for text in extra]
    return ModelRequest(messages=messages, max_tokens=16, temperature=0.0, seed=3)


@pytest.mark.slow
async def test_a_context_grows_with_its_prompts_and_writes_what_a_full_one_writes(monkeypatch):
    growing = LocalLlamaClient("local/smollm2", slot="test/growing")
    await growing.complete(_request())
    assert growing._model.llama.n_ctx() == CONTEXT_STEP  # a short prompt: the first step
    grown_reply = await growing.complete(_request(STORY))  # ~1,000 tokens more: it grows
    assert growing._model.grown == 1
    size = growing._model.llama.n_ctx()
    assert CONTEXT_STEP < size <= growing._model.n_ctx
    assert size >= grown_reply.usage.input_tokens + 16

    # The same calls on a slot whose context has that size from the start.
    monkeypatch.setattr(llama_slots, "CONTEXT_STEP", size)
    full = LocalLlamaClient("local/smollm2", slot="test/full-size")
    await full.complete(_request())
    assert full._model.llama.n_ctx() == size
    full_reply = await full.complete(_request(STORY))
    assert full._model.grown == 0
    assert grown_reply.text == full_reply.text


@pytest.mark.slow
async def test_slots_share_one_model_and_a_released_slot_loads_again():
    from loom_sim.models.llama_shared import loaded_models

    a = LocalLlamaClient("local/smollm2", slot="test/a")
    b = LocalLlamaClient("local/smollm2", slot="test/b")
    first = await a.complete(_request("Say hello."))
    await b.complete(_request("Say hello."))
    assert a._model.llama._model._entry is b._model.llama._model._entry  # one model
    models = loaded_models()
    assert release_slots(keep=[s for (_, s) in llama_slots._CACHE if s != "test/b"]) == 1
    assert b._model.llama is None
    assert loaded_models() == models  # a still holds the model
    again = await b.complete(_request("Say hello."))  # loads again, on the same model
    assert again.text == first.text
