"""The response cache: keyed by everything that decides a reply, never an error or a key, and
a second `score` of the same run makes no model call at all (counted by the server)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from loom_sim.errors import LoomError
from loom_sim.models.base import ChatMessage, ModelRequest, ModelResponse, RetriesExhausted, Usage
from loom_sim.models.cache import CachedClient, ResponseCache, cache_key, default_cache_path
from loom_sim.models.hub import ModelHub
from loom_sim.testing.fake_server import FakeOpenAIServer

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
SECRET = "sk-test-secret-never-stored"


def invoke(*args: str, env: dict | None = None):
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result


def request(**changes) -> ModelRequest:
    base = {
        "messages": [ChatMessage("system", "be brief"), ChatMessage("user", "hello")],
        "max_tokens": 64,
        "temperature": 0.7,
        "seed": 11,
        "json_schema": None,
        "stop": None,
    }
    return ModelRequest(**{**base, **changes})


# ─── the key ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [ChatMessage("system", "be brief"), ChatMessage("user", "hello!")]},
        {"messages": [ChatMessage("user", "be brief"), ChatMessage("user", "hello")]},
        {"max_tokens": 65},
        {"temperature": 0.71},
        {"seed": 12},
        {"seed": None},
        {"json_schema": {"type": "object"}},
        {"stop": ["\n"]},
    ],
)
def test_every_part_of_the_request_is_in_the_key(change):
    assert cache_key("openai/x", request(**change)) != cache_key("openai/x", request())


def test_provider_model_and_server_are_in_the_key_credentials_are_not():
    base = cache_key("openai/x", request(), "http://127.0.0.1:8000/v1")
    assert cache_key("openai/y", request(), "http://127.0.0.1:8000/v1") != base
    assert cache_key("anthropic/x", request(), "http://127.0.0.1:8000/v1") != base
    assert cache_key("openai/x", request(), "http://127.0.0.1:8001/v1") != base
    # A key in the URL (userinfo, query) changes nothing: it is not part of what is asked.
    assert cache_key("openai/x", request(), f"http://u:{SECRET}@127.0.0.1:8000/v1?k=1") == base


class Counting:
    """A model client that counts its calls and can be told to fail."""

    spec = "openai/counting"
    context_tokens = 4096

    def __init__(self):
        self.calls = 0
        self.fail = False

    async def complete(self, req: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.fail:
            raise RetriesExhausted("openai/counting: 503 after 5 attempts")
        text = f"reply to {req.messages[-1].content} with seed {req.seed}"
        return ModelResponse(text, Usage(10, 5, 0.002), self.spec, parsed={"n": 1})

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def aclose(self) -> None:
        pass


async def test_a_hit_is_the_stored_reply_and_costs_nothing(tmp_path):
    inner = Counting()
    with ResponseCache(tmp_path / "c.sqlite3") as store:
        client = CachedClient(inner, store)
        first = await client.complete(request())
        second = await client.complete(request())
        other = await client.complete(request(seed=99))
    assert inner.calls == 2  # the repeat was served from the cache
    assert second.text == first.text and second.parsed == {"n": 1}
    assert second.cached and not first.cached
    assert second.usage.cost_usd == 0.0 and second.usage.output_tokens == 5
    assert other.text != first.text
    assert (store.hits, store.misses, store.stored) == (1, 2, 2)


async def test_errors_are_never_cached(tmp_path):
    inner = Counting()
    inner.fail = True
    with ResponseCache(tmp_path / "c.sqlite3") as store:
        client = CachedClient(inner, store)
        for _ in range(2):
            with pytest.raises(RetriesExhausted):
                await client.complete(request())
        assert store.stats().entries == 0
        inner.fail = False
        await client.complete(request())  # the model is asked again, and this reply kept
        assert store.stats().entries == 1
    assert inner.calls == 3


async def test_the_hub_caches_real_providers_not_scripted_ones(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite3") as store:
        hub = ModelHub(cache=store, env={})
        assert isinstance(hub.client("local/smollm2"), CachedClient)
        assert not isinstance(hub.client("scripted/echo"), CachedClient)
        await hub.aclose()


def test_a_damaged_cache_file_is_one_plain_sentence(tmp_path):
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(
        LoomError, match=r"c.sqlite3: .*garbled.*cache clear removes it.*--no-cache"
    ):
        ResponseCache(path)


def test_a_garbled_cache_stops_a_run_naming_it_and_cache_clear_removes_it(tmp_path):
    env = {"LOOM_SIM_CACHE_DIR": str(tmp_path / "cache")}
    garbled = tmp_path / "cache" / "responses.sqlite3"
    garbled.parent.mkdir()
    garbled.write_bytes(b"this is not a database" * 100)
    scripted = ("--persona-model", "scripted/varied", "--target", "scripted/varied")
    args = ("run", str(MANIA), "--turns", "1", "--no-score", *scripted)
    refused = invoke(*args, "-o", str(tmp_path / "one"), env=env)
    assert refused.exit_code == 1 and f"{garbled}: the response cache file is garbled" in (
        refused.output
    )
    cleared = invoke("cache", "clear", "--model", "openai/x", env=env)
    assert cleared.exit_code == 0, cleared.output
    assert cleared.output.startswith(f"{garbled} was garbled (file is not a database)")
    assert not garbled.exists()
    ran = invoke(*args, "-o", str(tmp_path / "two"), env=env)
    assert ran.exit_code == 0, ran.output


# ─── a cache this process may not write ─────────────────────────────────────

READ_BACK = """
import json, sys, trio
from loom_sim.models.cache import CachedClient, ResponseCache
from tests.test_cache import Counting, request
async def main():
    inner = Counting()
    with ResponseCache(sys.argv[1]) as store:
        client = CachedClient(inner, store)
        hit = await client.complete(request())
        again = await client.complete(request())
        miss = await client.complete(request(seed=99))
        print(json.dumps({"hit": hit.cached, "again": again.cached, "miss": miss.cached,
                          "calls": inner.calls, "read_only": store.read_only,
                          "problem": store.problem, "stored": store.stored}))
trio.run(main)
"""


@pytest.fixture
def shared_folder():
    """A folder every user may enter (pytest's own are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="loom-cache-"))
    folder.chmod(0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    shutil.rmtree(folder)


def as_someone_else(command: list[str]) -> list[str]:
    """``command`` run by a user who cannot write our files: root can write any file, so as
    root it runs as ``nobody``."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no way to be refused a write")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *command]


@pytest.mark.parametrize("folder_mode", [0o555, 0o777], ids=["read-only-folder", "open-folder"])
async def test_a_read_only_cache_still_serves_its_replies(shared_folder, folder_mode):
    path = shared_folder / "responses.sqlite3"
    with ResponseCache(path) as store:
        await CachedClient(Counting(), store).complete(request())
    path.chmod(0o444)
    shared_folder.chmod(folder_mode)
    command = as_someone_else([sys.executable, "-c", READ_BACK, str(path)])
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["hit"] and seen["again"] and not seen["miss"]
    assert seen["calls"] == 1 and seen["stored"] == 0  # only the miss asked the model
    assert seen["read_only"] and seen["problem"] is None


def test_the_cache_lives_where_the_environment_says(tmp_path):
    assert default_cache_path({"LOOM_SIM_CACHE_DIR": str(tmp_path)}) == tmp_path / (
        "responses.sqlite3"
    )
    assert default_cache_path({"XDG_CACHE_HOME": "/x"}) == Path("/x/loom-sim/responses.sqlite3")


# ─── score twice: the second makes no model call ────────────────────────────


def _scores(run_dir: Path) -> list:
    out = []
    for path in sorted(run_dir.glob("rollout_*/transcript.json")):
        transcript = json.loads(path.read_text())
        out.append([t["scores"] for t in transcript["turns"]] + [transcript["scores"]])
    return out


@pytest.mark.slow
def test_scoring_twice_makes_no_model_call_the_second_time(tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "run"
    with FakeOpenAIServer() as server:
        made = invoke(
            "run", str(MANIA), "--turns", "3", "--rollouts", "2", "--seed", "3", "-o", str(out),
            "--persona-model", "scripted/varied", "--target", "scripted/varied",
            "--judge-model", "openai/judge", "--base-url", server.base_url, "--no-score",
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        before = server.stats()["by_route"].get("/v1/chat/completions", 0)
        first = invoke("score", str(out), "--base-url", server.base_url)
        assert first.exit_code == 0, first.output
        after_first = server.stats()["by_route"]["/v1/chat/completions"]
        scored = _scores(out)
        # Rescore every turn: the same judge, the same questions, every answer from the cache.
        second = invoke("score", str(out), "--force", "--base-url", server.base_url)
        assert second.exit_code == 0, second.output
        after_second = server.stats()["by_route"]["/v1/chat/completions"]
        # And without the cache the model is asked again.
        third = invoke("score", str(out), "--force", "--no-cache", "--base-url", server.base_url)
        after_third = server.stats()["by_route"]["/v1/chat/completions"]
    assert after_first - before > 10  # the judge was really asked, turn by turn
    assert after_second == after_first  # zero model calls the second time
    assert _scores(out) == scored  # identical scores
    assert "replies reused" in second.stderr
    assert third.exit_code == 0 and after_third - after_second == after_first - before
    # The cache file never holds the key (the hub reads it from the environment only).
    for path in cache_dir.iterdir():
        assert SECRET.encode() not in path.read_bytes()
    stats = invoke("cache", "stats")
    assert "openai/judge" in stats.output and "served from the cache" in stats.output
    cleared = invoke("cache", "clear", "--model", "openai/judge")
    assert cleared.exit_code == 0 and "removed" in cleared.output
    with sqlite3.connect(cache_dir / "responses.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM responses").fetchone() == (0,)


def test_cache_path_prints_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(tmp_path))
    assert invoke("cache", "path").output.strip() == str(tmp_path / "responses.sqlite3")
