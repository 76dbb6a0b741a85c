"""The models of one run: validated up front, created once, shared, closed together.

A run names its models as spec strings (``openai/gpt-4.1``, ``local/smollm2``…) per role. The
hub is the one place that turns them into clients, which buys three things:

* **Fail before spending.** :meth:`ModelHub.check` validates a spec — its shape, its
  provider, that a script or GGUF file exists, that the provider's key is in the environment
  — so a missing ``OPENAI_API_KEY`` is reported before the first persona turn, not after an
  hour of local work.
* **Small shared pools.** HTTP providers get one ``httpx.AsyncClient`` per
  ``(provider, base URL, rollout_index // rollouts_per_client)``: rollouts 0–7 share a pool,
  rollout 8 starts the next. One giant pool would be slow (httpcore scans every connection on
  every request), one pool per rollout would waste connections and handshakes.
* **One limit per provider.** A ``trio.CapacityLimiter`` per provider bounds the calls in
  flight across the whole run (rate limits are per account, not per rollout), defaulting to
  64 for OpenAI, 16 for Anthropic, 1 for the local model (it runs one call at a time anyway).

Keys are read from the environment only, and never appear in a repr, an error or a log line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from loom_sim.models._http import HTTPPool, check_base_url
from loom_sim.models.anthropic import DEFAULT_ANTHROPIC_BASE_URL, AnthropicClient
from loom_sim.models.base import MissingAPIKey, ModelClient, ModelError
from loom_sim.models.local import LocalLlamaClient, resolve_local_path
from loom_sim.models.openai import DEFAULT_OPENAI_BASE_URL, OpenAIClient
from loom_sim.models.pricing import Price, PriceTable
from loom_sim.models.retry import RetryPolicy
from loom_sim.models.scripted import BUILTIN_SCRIPTS, SCRIPT_SUFFIXES, ScriptedClient

__all__ = ["DEFAULT_PROVIDER_CONCURRENCY", "PROVIDERS", "ModelHub", "ModelSpec", "parse_spec"]

PROVIDERS = ("local", "openai", "anthropic", "scripted")
DEFAULT_PROVIDER_CONCURRENCY = {"openai": 64, "anthropic": 16, "local": 1, "scripted": 256}
_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True)
class ModelSpec:
    """``provider/name`` split: ``openai/gpt-4.1`` → ``("openai", "gpt-4.1")``."""

    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_spec(spec: str) -> ModelSpec:
    """Split and validate the shape of a spec string (no files or keys checked)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ModelError("a model spec is empty; write it as provider/name, e.g. openai/gpt-4.1.")
    if spec != spec.strip() or "/" not in spec:
        raise ModelError(
            f"model spec {spec!r} needs a provider: write it as provider/name "
            f"(providers: {', '.join(PROVIDERS)}), e.g. openai/gpt-4.1 or local/smollm2."
        )
    provider, name = spec.split("/", 1)
    if provider not in PROVIDERS:
        raise ModelError(
            f"model spec {spec!r} has an unknown provider {provider!r}; "
            f"use one of {', '.join(PROVIDERS)}."
        )
    if not name:
        raise ModelError(f"model spec {spec!r} names no model after {provider}/.")
    return ModelSpec(provider, name)


class ModelHub:
    """Creates and shares the model clients of one run; ``await hub.aclose()`` at the end.

    ``base_url`` (the CLI's ``--base-url``) points ``openai/`` specs at an OpenAI-compatible
    server, else ``OPENAI_BASE_URL``; Anthropic's comes from ``ANTHROPIC_BASE_URL``. A key is
    required only for the providers' own APIs. ``prices`` and ``context_tokens`` override the
    built-in tables per spec; ``retry`` replaces the policy built from ``max_attempts``.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        prices: Mapping[str, Price | Mapping[str, Any]] | None = None,
        context_tokens: Mapping[str, int] | None = None,
        timeout_s: float = 120.0,
        max_attempts: int = 5,
        provider_concurrency: Mapping[str, int] | None = None,
        rollouts_per_client: int = 8,
        connections_per_client: int | None = None,
        env: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if rollouts_per_client < 1:
            raise ValueError("rollouts_per_client must be at least 1")
        self._env = os.environ if env is None else env
        self.base_url = base_url
        self.prices = PriceTable(prices)
        self._context_tokens = dict(context_tokens or {})
        self.timeout_s = timeout_s
        self.retry = retry if retry is not None else RetryPolicy(max_attempts=max_attempts)
        concurrency = dict(DEFAULT_PROVIDER_CONCURRENCY)
        concurrency.update(provider_concurrency or {})
        unknown = set(concurrency) - set(PROVIDERS)
        if unknown:
            raise ValueError(f"provider_concurrency names unknown providers: {sorted(unknown)}")
        self.provider_concurrency = concurrency
        self.rollouts_per_client = rollouts_per_client
        # Two connections per rollout: a persona turn and a judge or monitor call may overlap.
        self.connections_per_client = connections_per_client or 2 * rollouts_per_client
        self._limiters: dict[str, trio.CapacityLimiter] = {}
        self._pools: dict[tuple[str, str, int], HTTPPool] = {}
        self._clients: dict[tuple[str, int, str], ModelClient] = {}
        self._closed = False

    def __repr__(self) -> str:  # never the environment: it holds the keys
        return (
            f"ModelHub(clients={len(self._clients)}, pools={len(self._pools)}, "
            f"base_url={self.base_url!r})"
        )

    async def __aenter__(self) -> ModelHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ── validation ──

    def _base_url(self, provider: str) -> str:
        if provider == "openai":
            return (
                self.base_url or self._env.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
            ).rstrip("/")
        return (self._env.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL).rstrip("/")

    def _key(self, provider: str) -> str | None:
        return self._env.get(_KEY_ENV[provider]) or None

    def check(self, spec: str) -> ModelSpec:
        """Validate ``spec`` so that a run fails before its first call, not during it."""
        parsed = parse_spec(spec)
        provider, name = parsed.provider, parsed.name
        if provider == "local":
            resolve_local_path(spec)
        elif provider == "scripted":
            if name not in BUILTIN_SCRIPTS:
                path = Path(name).expanduser()
                if path.suffix.lower() not in SCRIPT_SUFFIXES:
                    raise ModelError(
                        f"{spec}: unknown script; use one of {', '.join(BUILTIN_SCRIPTS)} "
                        "or a .yaml/.yml/.json/.txt file."
                    )
                if not path.is_file():
                    raise ModelError(f"{spec}: the script file {path} does not exist.")
        else:
            default = (
                DEFAULT_OPENAI_BASE_URL if provider == "openai" else DEFAULT_ANTHROPIC_BASE_URL
            )
            base_url = check_base_url(spec, self._base_url(provider))
            # Local and self-hosted servers need no key; the provider's own API always does.
            if base_url == default and self._key(provider) is None:
                raise MissingAPIKey(f"{spec} needs an API key: set {_KEY_ENV[provider]}")
        return parsed

    # ── clients ──

    def limiter(self, provider: str) -> trio.CapacityLimiter:
        """The run-wide limit on calls in flight to ``provider``."""
        limiter = self._limiters.get(provider)
        if limiter is None:
            limiter = self._limiters[provider] = trio.CapacityLimiter(
                self.provider_concurrency[provider]
            )
        return limiter

    def _pool(self, provider: str, base_url: str, group: int) -> HTTPPool:
        key = (provider, base_url, group)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = HTTPPool(
                base_url, max_connections=self.connections_per_client
            )
        return pool

    def client(self, spec: str, rollout_index: int = 0, role: str = "") -> ModelClient:
        """The client for ``spec`` as used by ``role`` in rollout ``rollout_index`` (shared).

        HTTP clients are shared by groups of rollouts (small pools); local models by role
        (each role keeps its own llama.cpp prompt cache)."""
        if self._closed:
            raise ModelError(f"{spec}: the model hub of this run is already closed.")
        provider = self.check(spec).provider
        http = provider in ("openai", "anthropic")
        group = rollout_index // self.rollouts_per_client if http else 0
        slot = role if provider == "local" else ""
        cached = self._clients.get((spec, group, slot))
        if cached is not None:
            return cached
        ctx = self._context_tokens.get(spec)
        client: ModelClient
        if http:
            base_url = self._base_url(provider)
            cls = OpenAIClient if provider == "openai" else AnthropicClient
            client = cls(
                spec,
                base_url=base_url,
                env=self._env,
                pool=self._pool(provider, base_url, group),
                timeout_s=self.timeout_s,
                retry=self.retry,
                limiter=self.limiter(provider),
                prices=self.prices,
                context_tokens=ctx,
            )
        elif provider == "local":
            client = LocalLlamaClient(
                spec, limiter=self.limiter("local"), context_tokens=ctx, slot=slot
            )
        else:
            client = ScriptedClient(spec, limiter=self.limiter("scripted"))
            if ctx:
                client.context_tokens = ctx
        self._clients[(spec, group, slot)] = client
        return client

    async def aclose(self) -> None:
        """Close every pool (idempotent). Clients made by this hub are unusable afterwards."""
        self._closed = True
        pools, self._pools = list(self._pools.values()), {}
        self._clients.clear()
        for pool in pools:
            await pool.aclose()
