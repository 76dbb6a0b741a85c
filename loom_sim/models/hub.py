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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from loom_sim.models._http import HTTPPool, check_base_url
from loom_sim.models.base import (
    CallLimiter,
    MissingAPIKey,
    ModelClient,
    ModelError,
    Preloadable,
)
from loom_sim.models.cache import CachedClient, ResponseCache
from loom_sim.models.pricing import Price, PriceTable
from loom_sim.models.providers import PROVIDERS, ClientOptions, Provider, Sharing
from loom_sim.models.retry import RetryPolicy

__all__ = ["HubSettings", "ModelHub", "ModelSpec", "parse_spec"]


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
    known = ", ".join(PROVIDERS.names())
    if spec != spec.strip() or "/" not in spec:
        raise ModelError(
            f"model spec {spec!r} needs a provider: write it as provider/name "
            f"(providers: {known}), e.g. openai/gpt-4.1 or local/smollm2."
        )
    provider, name = spec.split("/", 1)
    if provider not in PROVIDERS:
        raise ModelError(
            f"model spec {spec!r} has an unknown provider {provider!r}; use one of {known}."
        )
    if not name:
        raise ModelError(f"model spec {spec!r} names no model after {provider}/.")
    return ModelSpec(provider, name)


@dataclass(frozen=True)
class HubSettings:
    """What a hub is made of, as plain values: another process (a worker of the ``processes``
    executor) is handed these and makes the same hub, with its own clients, pools and limits.
    The environment (keys, base URLs) is not among them: each process reads its own."""

    base_url: str | None
    prices: dict[str, Price | Mapping[str, Any]]
    context_tokens: dict[str, int]
    timeout_s: float
    max_attempts: int
    provider_concurrency: dict[str, int]
    rollouts_per_client: int
    connections_per_client: int

    def open(
        self,
        cache: ResponseCache | None = None,
        provider_concurrency: Mapping[str, int] | None = None,
    ) -> ModelHub:
        """The hub, with ``provider_concurrency`` in place of the recorded limits (a worker's
        share of them)."""
        return ModelHub(
            base_url=self.base_url,
            prices=self.prices,
            context_tokens=self.context_tokens,
            timeout_s=self.timeout_s,
            max_attempts=self.max_attempts,
            provider_concurrency=provider_concurrency or self.provider_concurrency,
            rollouts_per_client=self.rollouts_per_client,
            connections_per_client=self.connections_per_client,
            cache=cache,
        )


class ModelHub:
    """Creates and shares the model clients of one run; ``await hub.aclose()`` at the end.

    ``base_url`` (the CLI's ``--base-url``) points ``openai/`` specs at an OpenAI-compatible
    server, else ``OPENAI_BASE_URL``; Anthropic's comes from ``ANTHROPIC_BASE_URL``. A key is
    required only for the providers' own APIs. ``prices`` and ``context_tokens`` override the
    built-in tables per spec; ``retry`` replaces the policy built from ``max_attempts``;
    ``cache`` (the caller's, which it closes) serves and stores replies. ``limiters`` replace
    the per-provider limits with the caller's (a cluster's, which hold across machines).
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
        cache: ResponseCache | None = None,
        limiters: Mapping[str, CallLimiter] | None = None,
    ) -> None:
        if rollouts_per_client < 1:
            raise ValueError("rollouts_per_client must be at least 1")
        self._env = os.environ if env is None else env
        self.base_url = base_url
        self._given_prices = dict(prices or {})
        self.prices = PriceTable(prices, free=[p.name for p in PROVIDERS if p.free])
        self._context_tokens = dict(context_tokens or {})
        self.timeout_s = timeout_s
        self.retry = retry if retry is not None else RetryPolicy(max_attempts=max_attempts)
        concurrency = {p.name: p.concurrency for p in PROVIDERS}
        concurrency.update(provider_concurrency or {})
        unknown = sorted(set(concurrency) - set(PROVIDERS.names()))
        if unknown:
            raise ValueError(f"provider_concurrency names unknown providers: {unknown}")
        self.provider_concurrency = concurrency
        self.rollouts_per_client = rollouts_per_client
        # Two connections per rollout: a persona turn and a judge or monitor call may overlap.
        self.connections_per_client = connections_per_client or 2 * rollouts_per_client
        self._limiters: dict[str, CallLimiter] = dict(limiters or {})
        self._pools: dict[tuple[str, str, int], HTTPPool] = {}
        self._clients: dict[tuple[str, int, str], ModelClient] = {}
        self._checked: dict[str, ModelSpec] = {}  # a spec is checked once per hub
        self._closed = False
        self.cache = cache  # replies of cacheable providers are stored and reused (--cache)

    def __repr__(self) -> str:  # never the environment: it holds the keys
        return (
            f"ModelHub(clients={len(self._clients)}, pools={len(self._pools)}, "
            f"base_url={self.base_url!r})"
        )

    def settings(self) -> HubSettings:
        """What another process needs to make this hub again (its limits as given here)."""
        return HubSettings(
            base_url=self.base_url,
            prices=dict(self._given_prices),
            context_tokens=dict(self._context_tokens),
            timeout_s=self.timeout_s,
            max_attempts=self.retry.max_attempts,
            provider_concurrency=dict(self.provider_concurrency),
            rollouts_per_client=self.rollouts_per_client,
            connections_per_client=self.connections_per_client,
        )

    async def __aenter__(self) -> ModelHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ── validation ──

    def _base_url(self, provider: Provider) -> str:
        """The server an HTTP provider's specs go to: the run's ``--base-url`` (for providers
        that take it), the provider's environment variable, else its own API."""
        assert provider.default_base_url is not None
        given = self.base_url if provider.base_url_option else None
        env = self._env.get(provider.base_url_env) if provider.base_url_env else None
        return (given or env or provider.default_base_url).rstrip("/")

    def check(self, spec: str) -> ModelSpec:
        """Validate ``spec`` so that a run fails before its first call, not during it. Once per
        spec: what it reads (the environment, the model file) is the hub's for its run, and a
        run of 256 rollouts asks for each rollout's clients."""
        checked = self._checked.get(spec)
        if checked is not None:
            return checked
        parsed = parse_spec(spec)
        provider = PROVIDERS.get(parsed.provider)
        if provider.check is not None:
            provider.check(spec, parsed.name)
        if provider.http:
            base_url = check_base_url(spec, self._base_url(provider))
            # Local and self-hosted servers need no key; the provider's own API always does.
            default = (provider.default_base_url or "").rstrip("/")
            key = self._env.get(provider.key_env) if provider.key_env else None
            if base_url == default and provider.key_env and not key:
                raise MissingAPIKey(f"{spec} needs an API key: set {provider.key_env}")
        self._checked[spec] = parsed
        return parsed

    # ── clients ──

    def limiter(self, provider: str) -> CallLimiter:
        """The run-wide limit on calls in flight to ``provider`` (the one given for it, else a
        ``trio.CapacityLimiter`` of its configured size)."""
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
        """The client for ``spec`` as used by ``role`` in rollout ``rollout_index`` (shared as
        its provider says: HTTP clients by groups of rollouts, small pools; local models by
        role, each role keeping its own llama.cpp prompt cache; the rest by run)."""
        if self._closed:
            raise ModelError(f"{spec}: the model hub of this run is already closed.")
        parsed = self.check(spec)
        provider = PROVIDERS.get(parsed.provider)
        group = (
            rollout_index // self.rollouts_per_client
            if provider.sharing is Sharing.ROLLOUT_GROUP
            else 0
        )
        slot = role if provider.sharing is Sharing.ROLE else ""
        cached = self._clients.get((spec, group, slot))
        if cached is not None:
            return cached
        base_url = self._base_url(provider) if provider.http else None
        client = provider.make(
            ClientOptions(
                spec=spec,
                name=parsed.name,
                env=self._env,
                timeout_s=self.timeout_s,
                retry=self.retry,
                limiter=self.limiter(provider.name),
                prices=self.prices,
                context_tokens=self._context_tokens.get(spec),
                base_url=base_url,
                pool=self._pool(provider.name, base_url, group) if base_url else None,
                slot=slot,
            )
        )
        if self.cache is not None and provider.cacheable:
            # An in-process model names what it runs (which file, which quantisation): a reply
            # cached from another build of the same spec is never served for it.
            client = CachedClient(client, self.cache, base_url or getattr(client, "runs", None))
        self._clients[(spec, group, slot)] = client
        return client

    async def preload(
        self, models: Mapping[str, str] | Iterable[tuple[str, str]]
    ) -> list[tuple[str, str, float]]:
        """Load the in-process models of ``models`` ((role, spec) pairs, or role -> spec) now,
        one after another in worker threads; (role, spec, seconds) for each actually loaded. A
        model that cannot load is left to fail on its first call, where the rollout's error
        handling is."""
        loaded = []
        for role, spec in models.items() if isinstance(models, Mapping) else models:
            try:
                if PROVIDERS.get(parse_spec(spec).provider).http:
                    continue  # nothing to load (and no connection pool opened for it)
                client = self.client(spec, role=role)
                if isinstance(client, Preloadable):
                    seconds = await client.preload()
                    if seconds is not None:
                        loaded.append((role, spec, seconds))
            except ModelError:
                continue
        return loaded

    async def aclose(self) -> None:
        """Close every pool (idempotent). Clients made by this hub are unusable afterwards."""
        self._closed = True
        pools, self._pools = list(self._pools.values()), {}
        self._clients.clear()
        for pool in pools:
            await pool.aclose()
