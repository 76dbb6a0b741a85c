"""The model layer: one protocol for every model call, one place for each cross-cutting concern.

Roles call a :class:`ModelClient` made by a :class:`ModelHub` from a spec string
(``openai/…``, ``anthropic/…``, ``local/…``, ``scripted/…``). Retries live in
:mod:`~loom_sim.models.retry`, prices in :mod:`~loom_sim.models.pricing`, JSON repair in
:mod:`~loom_sim.models.json_repair`.

The names below are imported on first use: reading the provider registry (validating a config,
printing help) must not load an HTTP stack or llama.cpp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "AnthropicClient": "anthropic",
    "BadModelReply": "base",
    "ChatMessage": "base",
    "MissingAPIKey": "base",
    "ModelClient": "base",
    "ModelError": "base",
    "ModelRequest": "base",
    "ModelResponse": "base",
    "ModelUnavailable": "base",
    "RetriesExhausted": "base",
    "Usage": "base",
    "ModelHub": "hub",
    "ModelSpec": "hub",
    "parse_spec": "hub",
    "parse_json": "json_repair",
    "LocalLlamaClient": "local",
    "OpenAIClient": "openai",
    "DEFAULT_PRICES": "pricing",
    "Price": "pricing",
    "PriceTable": "pricing",
    "RetryPolicy": "retry",
    "ScriptedClient": "scripted",
}

__all__ = [
    "DEFAULT_PRICES",
    "AnthropicClient",
    "BadModelReply",
    "ChatMessage",
    "LocalLlamaClient",
    "MissingAPIKey",
    "ModelClient",
    "ModelError",
    "ModelHub",
    "ModelRequest",
    "ModelResponse",
    "ModelSpec",
    "ModelUnavailable",
    "OpenAIClient",
    "Price",
    "PriceTable",
    "RetriesExhausted",
    "RetryPolicy",
    "ScriptedClient",
    "Usage",
    "parse_json",
    "parse_spec",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from loom_sim.models.anthropic import AnthropicClient
    from loom_sim.models.base import (
        BadModelReply,
        ChatMessage,
        MissingAPIKey,
        ModelClient,
        ModelError,
        ModelRequest,
        ModelResponse,
        ModelUnavailable,
        RetriesExhausted,
        Usage,
    )
    from loom_sim.models.hub import ModelHub, ModelSpec, parse_spec
    from loom_sim.models.json_repair import parse_json
    from loom_sim.models.local import LocalLlamaClient
    from loom_sim.models.openai import OpenAIClient
    from loom_sim.models.pricing import DEFAULT_PRICES, Price, PriceTable
    from loom_sim.models.retry import RetryPolicy
    from loom_sim.models.scripted import ScriptedClient
