"""The fake OpenAI/Anthropic server used by the model tests and the benchmarks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from loom_sim.testing.fake_replies import example_for_schema
from loom_sim.testing.fake_server import FakeOpenAIServer


def post(url: str, payload: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_serves_both_apis_and_counts():
    with FakeOpenAIServer(fault_sequence="429,ok,500", retry_after=2) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "one two three"}]}
        status, reply = post(server.base_url + "/chat/completions", body)
        assert status == 429 and reply["error"]["type"] == "rate_limit_error"
        status, reply = post(server.base_url + "/chat/completions", body)
        assert status == 200
        assert reply["choices"][0]["message"]["content"] == "reply 1: one two three"
        assert reply["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
        status, reply = post(server.url + "/v1/messages", {**body, "max_tokens": 5})
        assert status == 500
        status, reply = post(server.url + "/v1/messages", {**body, "max_tokens": 5})
        assert reply["content"][0]["text"] == "reply 1: one two three"
        assert reply["usage"]["input_tokens"] == 3
        with urllib.request.urlopen(server.base_url + "/models", timeout=5) as models:
            assert json.loads(models.read())["data"][0]["id"] == "fake"
        stats = server.stats()
    assert stats["faults_by_kind"] == {"429": 1, "500": 1}
    assert stats["by_route"]["/v1/chat/completions"] == 2
    assert stats["by_route"]["/v1/messages"] == 2


def test_exits_when_stdin_closes():
    proc = subprocess.Popen(
        [sys.executable, "-m", "loom_sim.testing.fake_openai", "--port", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().startswith(b"LISTENING ")
    proc.stdin.close()
    assert proc.wait(timeout=5) == 0
    proc.stdout.close()


def test_exits_after_its_maximum_lifetime():
    proc = subprocess.Popen(
        [sys.executable, "-m", "loom_sim.testing.fake_openai", "--max-lifetime", "0.2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    started = time.monotonic()
    assert proc.wait(timeout=5) == 0
    assert time.monotonic() - started < 4
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.stdout.close()


def test_unknown_options_are_rejected():
    with pytest.raises(TypeError, match="lateny"):
        FakeOpenAIServer(lateny=0.1)


def test_schema_examples():
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer"},
            "label": {"enum": ["good", "bad"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ok": {"type": ["boolean", "null"]},
        },
    }
    assert example_for_schema(schema, "t", 3) == {
        "score": 3,
        "label": "good",
        "tags": ["t"],
        "ok": True,
    }


def test_remembered_word_counts_are_the_counts(monkeypatch):
    # The server remembers the counts of texts it has seen (a conversation repeats them); what
    # it reports must be the count of the text, whether remembered or not, and after it forgets.
    from loom_sim.testing import fake_replies

    monkeypatch.setattr(fake_replies, "_COUNTED", {})
    monkeypatch.setattr(fake_replies, "_COUNTED_MAX", 3)
    texts = ["one two  three", "", " a\nb\tc d ", "one two  three", "x " * 50, "y", " a\nb\tc d "]
    for round_ in range(3):
        messages = [{"role": "user", "content": t} for t in texts[round_:]]
        expected = sum(len(t.split()) for t in texts[round_:]) + 2
        assert fake_replies._word_count(messages, "system prompt") == expected
    assert len(fake_replies._COUNTED) <= 3
