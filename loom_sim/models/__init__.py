"""The model layer: one protocol for every model call, one place for each cross-cutting concern.

Roles call a :class:`ModelClient` made by a :class:`ModelHub` from a spec string
(``openai/…``, ``anthropic/…``, ``local/…``, ``scripted/…``). Retries live in
:mod:`~loom_sim.models.retry`, prices in :mod:`~loom_sim.models.pricing`, JSON repair in
:mod:`~loom_sim.models.json_repair`.
"""

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
