"""Where OpenAI's and Anthropic's APIs are, and where their keys come from: said once.

The provider registry (which must stay light: reading it loads no HTTP stack), the clients and
the hub's key check all read these, so the default server, the variable that redirects it and
the variable that holds the key cannot drift apart between them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ANTHROPIC", "OPENAI", "Endpoint"]


@dataclass(frozen=True)
class Endpoint:
    """A provider's own API: its default base URL and the environment variables it reads."""

    default_base_url: str
    base_url_env: str
    key_env: str

    def resolve(
        self, base_url: str | None, api_key: str | None, env: Mapping[str, str] | None
    ) -> tuple[str, str | None]:
        """A client's ``(base URL, key)``: the server given, else the redirecting variable,
        else the provider's own; the key given (an empty one meaning none), else the key
        variable, else None. ``env`` None reads the process environment."""
        env = os.environ if env is None else env
        base = base_url or env.get(self.base_url_env) or self.default_base_url
        key = api_key if api_key is not None else env.get(self.key_env) or None
        return base, key


OPENAI = Endpoint("https://api.openai.com/v1", "OPENAI_BASE_URL", "OPENAI_API_KEY")
ANTHROPIC = Endpoint("https://api.anthropic.com", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
