"""The HTTP and model adapters against real servers on loopback: an OpenAI-compatible one, a
JSON endpoint with its own request and reply shape; dead and garbled servers."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trio

from loom_sim.harness.targets import AdapterContext, TargetFatal, open_target
from loom_sim.harness.targets.http import HttpSettings, parse_path, pluck
from loom_sim.harness.targets.model import ModelSettings
from loom_sim.models.scripted import ScriptedClient
from loom_sim.testing.fake_server import FakeOpenAIServer
from tests.servers import free_port


@contextmanager
def json_endpoint():
    """A chat endpoint of its own shape: {"input": ..., "history": [...]} -> {"data": {...}};
    the word "garble" gets a reply without the field; the key must be sent."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"body": body, "auth": self.headers.get("Authorization")})
            said = body["input"]
            answer = {"oops": 1} if "garble" in said else {"data": {"reply": f"echo: {said}"}}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/chat", seen
    finally:
        server.shutdown()
        server.server_close()


async def exchange(settings, tmp_path, lines, history=(), model=None):
    context = AdapterContext(
        workdir=tmp_path,
        bundle=tmp_path,
        inputs=[],
        seed=3,
        history=list(history),
        model=model or (lambda spec: None),  # type: ignore[arg-type,return-value]
    )
    adapter = open_target(settings, context)
    async with trio.open_nursery() as nursery:
        try:
            await adapter.start(nursery)
            replies = []
            for line in lines:
                await adapter.send(line)
                replies.append(await adapter.receive())
            return replies
        finally:
            await adapter.close()


def test_reply_paths():
    assert parse_path("$.choices[0].message.content") == ["choices", 0, "message", "content"]
    assert pluck({"a": [{"b": "x"}]}, parse_path("a[0].b")) == "x"
    with pytest.raises(ValueError):
        parse_path("$")


async def test_an_openai_compatible_server(tmp_path):
    with FakeOpenAIServer() as server:
        settings = HttpSettings(adapter="http", url=server.base_url, model="m", system="be brief")
        first, second = await exchange(settings, tmp_path, ["hello there", "and again"])
    assert first.ended_by == "complete" and first.text.startswith("reply 2: hello there")
    assert second.text.startswith("reply 4: and again")  # the history went with it
    assert first.usage.output_tokens > 0


async def test_a_json_endpoint_with_template_key_and_garbled_reply(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAT_TOKEN", "s3cret")
    with json_endpoint() as (url, seen):
        settings = HttpSettings(
            adapter="http",
            url=url,
            api="json",
            api_key_env="CHAT_TOKEN",
            request={"input": "{message}", "history": "{messages}", "tag": "q: {message}"},
            reply_field="$.data.reply",
        )
        good, bad, after = await exchange(
            settings, tmp_path, ["hi", "garble", "bye"], history=[("earlier", "before")]
        )
    assert good.text == "echo: hi" and good.error is None
    assert bad.text == "" and "no $.data.reply in the reply" in (bad.error or "")
    assert after.text == "echo: bye"
    first = seen[0]
    assert first["auth"] == "Bearer s3cret"
    assert first["body"]["tag"] == "q: hi"
    assert first["body"]["history"][-3:] == [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "before"},
        {"role": "user", "content": "hi"},
    ]


async def test_a_dead_server_is_fatal(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    for api in ("openai", "json"):
        settings = HttpSettings(adapter="http", url=dead, api=api, max_attempts=1)
        with pytest.raises(BaseExceptionGroup) as caught:
            await exchange(settings, tmp_path, ["hello"])
        (fatal,) = caught.value.exceptions
        assert isinstance(fatal, TargetFatal) and "could not be reached" in str(fatal)


async def test_a_model_spec_as_target(tmp_path):
    client = ScriptedClient("scripted/echo")
    settings = ModelSettings(adapter="model", spec="scripted/echo")
    (reply,) = await exchange(settings, tmp_path, ["same words back"], model=lambda spec: client)
    assert reply.text == "same words back" and reply.ended_by == "complete"
