"""The retry policy: backoff with jitter, Retry-After, what fails at once, what gives up."""

from __future__ import annotations

import email.utils
import random

import httpx
import pytest

from loom_sim.models.base import ModelError, ModelUnavailable, RetriesExhausted
from loom_sim.models.retry import (
    RETRYABLE_STATUS,
    AttemptFailed,
    RetryPolicy,
    parse_retry_after,
    status_error,
)

SPEC = "openai/gpt-4.1"


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def failing(failures: list[AttemptFailed], result: str = "ok"):
    """An attempt function that raises the given failures in turn, then returns ``result``."""
    calls = {"n": 0}

    async def attempt() -> str:
        calls["n"] += 1
        if failures:
            raise failures.pop(0)
        return result

    attempt.calls = calls  # type: ignore[attr-defined]
    return attempt


def policy(**kwargs) -> tuple[RetryPolicy, FakeSleep]:
    sleep = FakeSleep()
    kwargs.setdefault("rng", random.Random(42))
    return RetryPolicy(sleep=sleep, **kwargs), sleep


async def test_delays_follow_exponential_backoff_with_full_jitter():
    retry, sleep = policy(base_s=0.5, cap_s=30.0, max_attempts=5)
    attempt = failing([AttemptFailed("HTTP 500 (server error)") for _ in range(4)])
    result, attempts = await retry.run(SPEC, attempt)
    assert (result, attempts) == ("ok", 5)
    expected_rng = random.Random(42)
    expected = [expected_rng.uniform(0, 0.5 * 2**n) for n in range(4)]
    assert sleep.delays == pytest.approx(expected)
    for n, delay in enumerate(sleep.delays):
        assert 0 <= delay <= 0.5 * 2**n


async def test_backoff_is_capped():
    retry, _ = policy(base_s=1.0, cap_s=3.0)
    ceilings = []
    for attempt in range(1, 8):
        samples = [retry.backoff(attempt) for _ in range(200)]
        ceilings.append(max(samples))
        assert all(0 <= s <= 3.0 for s in samples)
    assert ceilings[0] <= 1.0 and ceilings[1] <= 2.0


async def test_different_seeds_give_different_jitter():
    a, _ = policy(rng=random.Random(1))
    b, _ = policy(rng=random.Random(2))
    assert [a.backoff(3) for _ in range(3)] != [b.backoff(3) for _ in range(3)]


async def test_retry_after_replaces_the_backoff_and_is_capped():
    retry, sleep = policy(retry_after_cap_s=10.0)
    attempt = failing(
        [
            AttemptFailed("HTTP 429 (rate limited)", retry_after=2.5),
            AttemptFailed("HTTP 429 (rate limited)", retry_after=3600.0),
        ]
    )
    await retry.run(SPEC, attempt)
    assert sleep.delays == [2.5, 10.0]


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30.0)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


@pytest.mark.parametrize("status", sorted(RETRYABLE_STATUS))
def test_retryable_statuses(status):
    failure = status_error(
        status,
        {"retry-after": "3"},
        b"{}",
        spec=SPEC,
        model="gpt-4.1",
        base_url="https://api.openai.com/v1",
        key_env="OPENAI_API_KEY",
        has_key=True,
    )
    assert isinstance(failure, AttemptFailed)
    assert str(status) in failure.reason
    assert failure.retry_after == 3.0


def _final(status: int, body: bytes = b"{}", has_key: bool = True, secrets=()) -> ModelError:
    error = status_error(
        status,
        {},
        body,
        spec=SPEC,
        model="gpt-4.1",
        base_url="https://api.openai.com/v1",
        key_env="OPENAI_API_KEY",
        has_key=has_key,
        secrets=secrets,
    )
    assert isinstance(error, ModelError), f"{status} must not be retried"
    return error


def test_non_retryable_statuses_say_what_to_fix():
    assert "the key in OPENAI_API_KEY was rejected" in str(_final(401))
    assert "the key in OPENAI_API_KEY was rejected" in str(_final(403))
    assert "set OPENAI_API_KEY" in str(_final(401, has_key=False))
    not_found = str(_final(404))
    assert "model 'gpt-4.1' not found at https://api.openai.com/v1" in not_found
    bad = str(_final(400, b'{"error": {"message": "max_tokens is too large"}}'))
    assert "HTTP 400" in bad and "max_tokens is too large" in bad
    assert "HTTP 422" in str(_final(422))
    for status in (400, 401, 403, 404, 422):
        message = str(_final(status))
        assert message.startswith(SPEC)
        assert "\n" not in message


def test_server_messages_are_masked():
    body = b'{"error": {"message": "Incorrect API key provided: sk-very-secret-123"}}'
    message = str(_final(401, body, secrets=("sk-very-secret-123",)))
    assert "sk-very-secret-123" not in message
    assert "***" in message


async def test_final_errors_are_not_retried():
    retry, sleep = policy()

    async def attempt() -> str:
        raise ModelError("openai/gpt-4.1: the key in OPENAI_API_KEY was rejected")

    with pytest.raises(ModelError, match="rejected"):
        await retry.run(SPEC, attempt)
    assert sleep.delays == []


async def test_exhausting_attempts_names_the_model_and_the_last_error():
    retry, sleep = policy(max_attempts=3)
    attempt = failing(
        [
            AttemptFailed("HTTP 500 (server error)"),
            AttemptFailed("HTTP 502 (bad gateway)"),
            AttemptFailed("HTTP 529 (overloaded)"),
        ]
    )
    with pytest.raises(RetriesExhausted) as caught:
        await retry.run(SPEC, attempt)
    message = str(caught.value)
    assert SPEC in message and "3 attempts" in message and "HTTP 529 (overloaded)" in message
    assert "\n" not in message
    assert len(sleep.delays) == 2


async def test_connection_failures_end_as_model_unavailable():
    retry, _ = policy(max_attempts=2)
    attempt = failing(
        [AttemptFailed("cannot connect", kind="connect") for _ in range(2)], result="never"
    )
    with pytest.raises(ModelUnavailable, match="could not be reached after 2 attempts"):
        await retry.run(SPEC, attempt)


def test_policy_rejects_zero_attempts():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_transport_errors_are_classified():
    from loom_sim.models.retry import transport_failure

    def classify(exc):
        return transport_failure(exc, spec=SPEC, base_url="http://h/v1", timeout_s=3)

    timeout = classify(httpx.ReadTimeout("slow"))
    assert isinstance(timeout, AttemptFailed) and timeout.kind == "timeout"
    assert timeout.reason == "no answer within 3 s"
    assert classify(httpx.ConnectError("refused")).kind == "connect"
    broken = classify(httpx.ReadError("reset"))
    assert isinstance(broken, AttemptFailed) and broken.kind == "status"
    final = classify(httpx.UnsupportedProtocol("Request URL is missing a scheme"))
    assert isinstance(final, ModelError) and "check the base URL" in str(final)
