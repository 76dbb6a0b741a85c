"""Model providers: the registry behind every ``provider/name`` spec, and loom-sim's four.

A provider is a name (the part of a spec before the slash), how its clients are made, and the
facts the rest of loom-sim needs without making one: the environment variable holding its key,
its default server, how many calls it takes at once, how clients are shared. The hub, the
config's spec validation, ``--help`` and the docs' table all read :data:`PROVIDERS`.

A provider is added by one decorated factory — here for loom-sim's own, in any module a
package's ``loom_sim.providers`` entry point names for a third party's::

    @provider("myapi", key_env="MYAPI_KEY", default_base_url="https://api.example.com/v1",
              summary="Example's chat API")
    def myapi(options: ClientOptions) -> ModelClient:
        return MyAPIClient(options.spec, base_url=options.base_url, pool=options.pool, ...)

Factories import their client classes when called, so reading the registry (validating a
config, printing help) never loads an HTTP stack or llama.cpp.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom_sim.models.base import CallLimiter, ModelClient, ModelError
from loom_sim.models.endpoints import ANTHROPIC, OPENAI
from loom_sim.plugins import Plugin, Registry

if TYPE_CHECKING:
    from loom_sim.models._http import HTTPPool
    from loom_sim.models.pricing import PriceTable
    from loom_sim.models.retry import RetryPolicy

__all__ = ["PROVIDERS", "ClientOptions", "Provider", "Sharing", "provider", "provider_limits"]


class Sharing(StrEnum):
    """How the clients of one spec are shared within a run."""

    RUN = "run"  # one client for the whole run
    ROLLOUT_GROUP = "rollout_group"  # HTTP: one pool per group of rollouts (small, warm pools)
    ROLE = "role"  # one per role: a local model keeps a prompt cache per role


@dataclass(frozen=True)
class ClientOptions:
    """What the hub hands a provider's factory, all resolved: nothing left to look up."""

    spec: str  # "openai/gpt-4.1"
    name: str  # "gpt-4.1"
    env: Mapping[str, str]
    timeout_s: float
    retry: RetryPolicy
    limiter: CallLimiter  # a trio.CapacityLimiter, or a cluster's limiter
    prices: PriceTable
    context_tokens: int | None = None  # the config's override, if any
    base_url: str | None = None  # HTTP providers: the server, resolved
    pool: HTTPPool | None = None  # HTTP providers: the shared connection pool
    slot: str = ""  # Sharing.ROLE: the role this client serves


@dataclass(frozen=True, kw_only=True)
class Provider(Plugin):
    make: Callable[[ClientOptions], ModelClient]
    concurrency: int = 16  # calls in flight across a run, unless the config says otherwise
    parallel: bool = True  # False: calls run one at a time whatever the limit (llama.cpp)
    free: bool = False  # calls cost nothing (a known price of 0, not an unknown one)
    key_env: str | None = None  # the environment variable holding the API key
    base_url_env: str | None = None  # the environment variable that redirects it
    base_url_option: bool = False  # the run's --base-url applies (OpenAI-compatible servers)
    default_base_url: str | None = None  # set for HTTP providers: the provider's own API
    sharing: Sharing = Sharing.RUN
    check: Callable[[str, str], None] | None = None  # (spec, name): raise ModelError if unusable
    cacheable: bool = True  # replies may be stored in the response cache (--cache)

    @property
    def http(self) -> bool:
        return self.default_base_url is not None


PROVIDERS: Registry[Provider] = Registry("provider", "loom_sim.providers")

Factory = Callable[[ClientOptions], ModelClient]


def provider(name: str, **fields: object) -> Callable[[Factory], Factory]:
    """Register the decorated factory as provider ``name`` (``fields``: see :class:`Provider`)."""

    def register(make: Factory) -> Factory:
        PROVIDERS.add(Provider(name=name, make=make, **fields))  # type: ignore[arg-type]
        return make

    return register


def provider_limits(concurrency: int) -> dict[str, int]:
    """Per-provider limits for a run of ``concurrency`` rollouts: each rollout has one call in
    flight at a time, so a lower limit would quietly serialise what the user asked to run in
    parallel. Providers that run one call at a time anyway keep theirs."""
    return {p.name: max(p.concurrency, concurrency) for p in PROVIDERS if p.parallel}


# ─── loom-sim's own ─────────────────────────────────────────────────────────


def _check_local(spec: str, name: str) -> None:
    from loom_sim import cpu
    from loom_sim.models.local import resolve_local_path

    resolve_local_path(spec)
    cpu.setting()  # a bad LOOM_SIM_THREADS is said before the run starts (not the machine's
    # load: that is looked at when the model loads, and a run checks each rollout's models)


@provider(
    "local",
    summary="a GGUF model run in-process by llama.cpp on the CPU: `local/smollm2` (the embedded "
    "SmolLM2-135M, run as Q8_0, no key, no network; replies capped at 128 tokens (a JSON "
    "answer: its keys and a sentence), judgements not "
    "meaningful) or `local/<path.gguf>`",
    order=10,
    concurrency=1,
    parallel=False,
    free=True,
    sharing=Sharing.ROLE,
    check=_check_local,
)
def local(options: ClientOptions) -> ModelClient:
    from loom_sim.models.local import LocalLlamaClient

    return LocalLlamaClient(
        options.spec,
        limiter=options.limiter,
        context_tokens=options.context_tokens,
        slot=options.slot,
    )


def _http_arguments(options: ClientOptions) -> dict[str, Any]:
    """What an HTTP client is made with, from the hub's options: the same for every HTTP
    provider, so a new option reaches all of them."""
    return {
        "base_url": options.base_url,
        "env": options.env,
        "pool": options.pool,
        "timeout_s": options.timeout_s,
        "retry": options.retry,
        "limiter": options.limiter,
        "prices": options.prices,
        "context_tokens": options.context_tokens,
    }


@provider(
    "openai",
    summary="OpenAI chat completions (`OPENAI_API_KEY`); with `--base-url` / `OPENAI_BASE_URL` "
    "any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, OpenRouter), where a key "
    "is optional",
    order=20,
    concurrency=64,
    key_env=OPENAI.key_env,
    base_url_env=OPENAI.base_url_env,
    base_url_option=True,
    default_base_url=OPENAI.default_base_url,
    sharing=Sharing.ROLLOUT_GROUP,
)
def openai(options: ClientOptions) -> ModelClient:
    from loom_sim.models.openai import OpenAIClient

    return OpenAIClient(options.spec, **_http_arguments(options))


@provider(
    "anthropic",
    summary="the Anthropic Messages API (`ANTHROPIC_API_KEY`; `ANTHROPIC_BASE_URL` to redirect)",
    order=30,
    concurrency=16,
    key_env=ANTHROPIC.key_env,
    base_url_env=ANTHROPIC.base_url_env,
    default_base_url=ANTHROPIC.default_base_url,
    sharing=Sharing.ROLLOUT_GROUP,
)
def anthropic(options: ClientOptions) -> ModelClient:
    from loom_sim.models.anthropic import AnthropicClient

    return AnthropicClient(options.spec, **_http_arguments(options))


def _check_scripted(spec: str, name: str) -> None:
    from loom_sim.models.scripted import SCRIPT_SUFFIXES, SCRIPTS

    if name in SCRIPTS:
        return
    path = Path(name).expanduser()
    if path.suffix.lower() not in SCRIPT_SUFFIXES:
        raise ModelError(
            f"{spec}: unknown script; use one of {', '.join(SCRIPTS.names())} "
            "or a .yaml/.yml/.json/.txt file."
        )
    if not path.is_file():
        raise ModelError(f"{spec}: the script file {path} does not exist.")


@provider(
    "scripted",
    summary="deterministic replies for tests and demos: a built-in script "
    "(`loom-sim plugins` lists them) or `scripted/<file>` holding `responses: [...]`",
    order=40,
    concurrency=256,
    free=True,
    check=_check_scripted,
    cacheable=False,  # answers instantly from its script: nothing to save
)
def scripted(options: ClientOptions) -> ModelClient:
    from loom_sim.models.scripted import ScriptedClient

    client = ScriptedClient(options.spec, limiter=options.limiter)
    if options.context_tokens:
        client.context_tokens = options.context_tokens
    return client
