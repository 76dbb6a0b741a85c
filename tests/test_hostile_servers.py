"""Servers that answer badly on purpose — dripping, endless, huge, redirecting, silent — against
every way loom-sim reads HTTP: the openai provider (both of its sending paths), the harness's
http target (both of its APIs), the probe, and `loom-sim run` end to end.

What must hold: a reply has a deadline for the whole of it, not for each read; a reply has a
size cap and is cut there; a redirect is named as one; each failure is one plain sentence.
Every call is also wrapped in a generous outer limit, so a regression fails instead of hanging.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from loom_sim.errors import LoomError
from loom_sim.harness.targets import AdapterContext, Exchange, TargetFatal, open_target
from loom_sim.harness.targets.http import HttpSettings
from loom_sim.harness.targets.model import ModelSettings
from loom_sim.models import ChatMessage, ModelError, ModelRequest, OpenAIClient, RetryPolicy
from loom_sim.models._http import HTTPPool
from loom_sim.models.anthropic import AnthropicClient
from loom_sim.models.base import BadModelReply, RetriesExhausted
from loom_sim.models.hub import ModelHub
from loom_sim.models.retry import AttemptFailed, Faults
from tests.hostile_http import HUGE_BYTES, REDIRECT_TO, hostile_server
from tests.probe_support import make_plan, run_plan

ROOT = Path(__file__).parent.parent
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
OUTER_S = 60  # far past every deadline below: reached only when a deadline does not hold


def request() -> ModelRequest:
    return ModelRequest(messages=[ChatMessage("user", "hello")], max_tokens=16, seed=1)


def retry() -> RetryPolicy:
    return RetryPolicy(max_attempts=5, base_s=0.001, cap_s=0.01)


@pytest.fixture(params=[True, False], ids=["fast-path", "httpx-client"])
def fast(request) -> bool:
    return request.param


async def complete(base_url: str, fast: bool, **kwargs) -> BaseException:
    """What one call of the openai provider at ``base_url`` raised."""
    pool = HTTPPool(base_url, fast=fast)
    model = OpenAIClient("openai/x", base_url=base_url, env={}, pool=pool, retry=retry(), **kwargs)
    try:
        with trio.fail_after(OUTER_S):
            await model.complete(request())
    except ModelError as exc:
        return exc
    finally:
        await pool.aclose()
    raise AssertionError("the call succeeded against a hostile server")


# ─── the openai provider ────────────────────────────────────────────────────


async def test_a_dripping_reply_fails_at_its_deadline_and_is_not_retried(fast):
    with hostile_server("drip") as server:
        error = await complete(server.base_url, fast, timeout_s=2)
        asked = server.requests
    assert isinstance(error, RetriesExhausted)
    assert str(error).startswith("openai/x failed 1 attempt: the reply was still arriving after")
    assert "2 s" in str(error) and "\n" not in str(error)
    assert asked == 1  # a trickle is not cured by asking the same server again


async def test_a_silent_server_is_retried_once_then_given_up(fast):
    with hostile_server("silent") as server:
        error = await complete(server.base_url, fast, timeout_s=0.5)
        asked = server.wait_for_requests(2)
    assert isinstance(error, RetriesExhausted)
    assert str(error) == (
        "openai/x failed 2 attempts: no complete reply within 0.5 s; "
        "raise the timeout or check the server."
    )
    assert asked == 2  # max_timeouts, though five attempts were allowed


async def test_an_endless_body_is_cut_at_the_cap(fast):
    with hostile_server("endless") as server:
        error = await complete(server.base_url, fast, timeout_s=30)
        asked = server.requests
    assert isinstance(error, BadModelReply)  # final: the same request brings the same flood
    assert "went past the 8 MiB cap on one reply's size" in str(error)
    assert "loom-sim stopped reading it" in str(error)
    assert asked == 1


async def test_a_small_cap_cuts_the_stream_where_it_says(fast):
    with hostile_server("endless") as server:
        error = await complete(server.base_url, fast, timeout_s=30, max_reply_bytes=100_000)
    assert "went past the 100,000 bytes cap" in str(error)


async def test_a_huge_body_is_refused_at_the_cap_not_read(fast):
    with hostile_server("huge") as server:
        error = await complete(server.base_url, fast, timeout_s=30)
        sent = server.sent
    assert isinstance(error, BadModelReply)
    assert "8 MiB cap" in str(error) and f"it declared {HUGE_BYTES:,} bytes" in str(error)
    assert sent < HUGE_BYTES  # the client stopped reading: the rest was never sent


async def test_a_redirect_is_named_not_followed(fast):
    with hostile_server("redirect") as server:
        error = await complete(server.base_url, fast, timeout_s=5)
        asked = server.requests
    message = str(error)
    assert f"answered HTTP 307, a redirect to {REDIRECT_TO}" in message
    assert "does not follow redirects" in message and "model name" not in message
    assert asked == 1


@pytest.mark.parametrize("kind", ["huge", "redirect"])
async def test_the_anthropic_provider_is_held_to_the_same_limits(kind):
    with hostile_server(kind) as server:
        model = AnthropicClient("anthropic/x", base_url=server.base_url, env={}, retry=retry())
        with pytest.raises(ModelError) as caught, trio.fail_after(OUTER_S):
            await model.complete(request())
        await model.aclose()
    expected = "8 MiB cap" if kind == "huge" else "does not follow redirects"
    assert expected in str(caught.value)


def test_a_failure_without_retries_is_not_summed_as_retried():
    faults = Faults()
    faults.give_up("openai/x")
    assert faults.summary() == "openai/x: 1 failed"
    faults.retry("openai/x", AttemptFailed("no answer", kind="timeout"))
    assert faults.summary() == "openai/x: 1 retried (timeout ×1), 1 failed after every retry"


# ─── the harness's http target ──────────────────────────────────────────────


async def one_exchange(
    settings: HttpSettings | ModelSettings, tmp_path: Path, model=None
) -> Exchange | TargetFatal:
    """The reply to one message, or the ``TargetFatal`` that ended the session."""
    context = AdapterContext(
        workdir=tmp_path,
        bundle=tmp_path,
        inputs=[],
        seed=3,
        history=[],
        model=model or (lambda spec: None),  # type: ignore[arg-type,return-value]
    )
    adapter = open_target(settings, context)
    with trio.fail_after(OUTER_S):
        async with trio.open_nursery() as nursery:
            try:
                await adapter.start(nursery)
                await adapter.send("hello")
                return await adapter.receive()
            except TargetFatal as exc:
                return exc
            finally:
                await adapter.close()


def target(server, api: str, **kwargs) -> HttpSettings:
    url = server.base_url if api == "openai" else server.url
    return HttpSettings(adapter="http", url=url, api=api, max_attempts=3, **kwargs)


@pytest.mark.parametrize("api", ["openai", "json"])
async def test_a_dripping_target_fails_at_its_reply_timeout(api, tmp_path):
    with hostile_server("drip") as server:
        fatal = await one_exchange(target(server, api, reply_timeout_s=2), tmp_path)
        asked = server.requests
    assert isinstance(fatal, TargetFatal)
    assert "the reply was still arriving after 2 s" in str(fatal) and "\n" not in str(fatal)
    assert asked == 1


async def test_a_model_target_fails_the_action_at_its_reply_timeout(tmp_path):
    with hostile_server("drip") as server:
        # the client's own deadline is far off: the target's setting must hold by itself
        client = OpenAIClient("openai/x", base_url=server.base_url, env={}, timeout_s=OUTER_S * 2)
        settings = ModelSettings(adapter="model", spec="openai/x", reply_timeout_s=2)
        reply = await one_exchange(settings, tmp_path, model=lambda spec: client)
        await client.aclose()
    assert isinstance(reply, Exchange) and reply.ended_by == "timeout"
    assert reply.error == "the model openai/x gave no reply within 2 s (reply_timeout_s)"


@pytest.mark.parametrize("kind", ["endless", "huge"])
@pytest.mark.parametrize("api", ["openai", "json"])
async def test_a_flooding_target_is_a_failed_action_cut_at_its_cap(api, kind, tmp_path):
    with hostile_server(kind) as server:
        settings = target(server, api, reply_timeout_s=30, max_reply_bytes=65_536)
        reply = await one_exchange(settings, tmp_path)
        sent = server.sent
    assert isinstance(reply, Exchange)
    assert reply.text == "" and "went past the 64 KiB cap" in (reply.error or "")
    if kind == "huge":
        assert sent < HUGE_BYTES


@pytest.mark.parametrize("api", ["openai", "json"])
async def test_a_redirecting_target_says_it_was_not_followed(api, tmp_path):
    with hostile_server("redirect") as server:
        fatal = await one_exchange(target(server, api, reply_timeout_s=5), tmp_path)
    assert isinstance(fatal, TargetFatal)
    assert f"a redirect to {REDIRECT_TO}" in str(fatal)
    assert "does not follow redirects" in str(fatal)


def test_a_target_cap_below_a_kilobyte_is_refused():
    with pytest.raises(ValueError, match="max_reply_bytes"):
        HttpSettings(adapter="http", url="http://127.0.0.1:1/v1", max_reply_bytes=10)


# ─── the probe and `loom-sim run` ───────────────────────────────────────────


async def test_a_dripping_target_stops_the_probe_in_one_sentence(tmp_path):
    with hostile_server("drip") as server:
        plan = make_plan(
            tmp_path, modes=("static",), runs=1, target="openai/x", base_url=server.base_url
        )
        hub = ModelHub(base_url=server.base_url, timeout_s=2, retry=retry())
        with pytest.raises(LoomError) as caught, trio.fail_after(OUTER_S):
            await run_plan(plan, hub=hub)
    message = str(caught.value)
    assert "openai/x failed 1 attempt: the reply was still arriving after 2 s" in message
    assert "\n" not in message


@pytest.mark.slow
def test_run_with_timeout_5_against_a_dripping_server_ends_within_15_s(tmp_path):
    out = tmp_path / "run"
    with hostile_server("drip") as server:
        command = [
            str(LOOM_SIM),
            "run",
            str(ROOT / "configs" / "examples" / "mania_patient.yaml"),
            *("--turns", "2", "--target", "openai/x", "--base-url", server.base_url),
            *("--persona-model", "scripted/varied", "--judge-model", "scripted/echo"),
            *("--timeout", "5", "--no-score", "--no-cache", "-o", str(out)),
        ]
        started = time.monotonic()
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=OUTER_S * 2
        )
        elapsed = time.monotonic() - started
    assert elapsed < 15, f"the run took {elapsed:.1f} s"
    assert done.returncode == 1 and "Traceback" not in done.stderr
    reason = "openai/x failed 1 attempt: the reply was still arriving after 5 s"
    [line] = [line for line in done.stderr.splitlines() if "rollout_000: error (" in line]
    assert reason in line and line.endswith("raise the timeout or check the server.)")
    assert "faults: openai/x: 1 failed" in done.stdout
