"""What a model call costs, in US dollars.

Researchers budget runs in dollars, and a run's report states its cost, so a wrong price is
worse than no price: an unknown model gets ``cost None`` ("unknown"), never a silent 0. Local
and scripted models genuinely cost nothing and get 0.

The default table holds list prices per million tokens (USD, standard tier, no batch or
cache discounts) as published by OpenAI and Anthropic in 2025. Prices change: a config or the
caller can override any entry, and overrides win over the table.

Dated snapshots match their family: ``anthropic/claude-opus-4-20250514`` is priced as
``anthropic/claude-opus-4``. Only a date (or ``-latest``) may follow the family name, so
``openai/gpt-4o-audio-preview`` does *not* silently inherit ``gpt-4o``'s price.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

__all__ = ["DEFAULT_PRICES", "Price", "PriceTable", "match_family"]


class Price(msgspec.Struct, frozen=True):
    """USD per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


def _p(input_per_mtok: float, output_per_mtok: float) -> Price:
    return Price(input_per_mtok, output_per_mtok)


DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "openai/gpt-4o": _p(2.50, 10.00),
    "openai/gpt-4o-mini": _p(0.15, 0.60),
    "openai/gpt-4.1": _p(2.00, 8.00),
    "openai/gpt-4.1-mini": _p(0.40, 1.60),
    "openai/gpt-4.1-nano": _p(0.10, 0.40),
    "openai/gpt-5": _p(1.25, 10.00),
    "openai/gpt-5-mini": _p(0.25, 2.00),
    "openai/gpt-5-nano": _p(0.05, 0.40),
    "openai/o1": _p(15.00, 60.00),
    "openai/o3": _p(2.00, 8.00),
    "openai/o3-mini": _p(1.10, 4.40),
    "openai/o4-mini": _p(1.10, 4.40),
    "openai/gpt-4-turbo": _p(10.00, 30.00),
    "openai/gpt-3.5-turbo": _p(0.50, 1.50),
    # Anthropic (API names use dashes; the dotted forms are how people write them)
    "anthropic/claude-opus-4": _p(15.00, 75.00),
    "anthropic/claude-opus-4-0": _p(15.00, 75.00),
    "anthropic/claude-opus-4-1": _p(15.00, 75.00),
    "anthropic/claude-opus-4.1": _p(15.00, 75.00),
    "anthropic/claude-opus-4-5": _p(5.00, 25.00),
    "anthropic/claude-opus-4.5": _p(5.00, 25.00),
    "anthropic/claude-sonnet-4": _p(3.00, 15.00),
    "anthropic/claude-sonnet-4-0": _p(3.00, 15.00),
    "anthropic/claude-sonnet-4-5": _p(3.00, 15.00),
    "anthropic/claude-sonnet-4.5": _p(3.00, 15.00),
    "anthropic/claude-3-7-sonnet": _p(3.00, 15.00),
    "anthropic/claude-3-5-sonnet": _p(3.00, 15.00),
    "anthropic/claude-haiku-4-5": _p(1.00, 5.00),
    "anthropic/claude-haiku-4.5": _p(1.00, 5.00),
    "anthropic/claude-3-5-haiku": _p(0.80, 4.00),
    "anthropic/claude-3-haiku": _p(0.25, 1.25),
    "anthropic/claude-3-opus": _p(15.00, 75.00),
}

# What may follow a family name: a snapshot date (2024-08-06, 20250514) or -latest.
_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)")


def match_family(spec: str, table: Mapping[str, Any]) -> Any | None:
    """``table[spec]``, else the entry for ``spec`` minus a date or ``-latest`` suffix."""
    hit = table.get(spec)
    if hit is not None:
        return hit
    suffix = _SUFFIX.search(spec)
    while suffix is not None:
        hit = table.get(spec[: suffix.start()])
        if hit is not None and _only_suffixes(spec[suffix.start() :]):
            return hit
        suffix = _SUFFIX.search(spec, suffix.start() + 1)
    return None


def _only_suffixes(rest: str) -> bool:
    while rest:
        m = _SUFFIX.match(rest)
        if m is None:
            return False
        rest = rest[m.end() :]
    return True


def _as_price(spec: str, value: Price | Mapping[str, Any]) -> Price:
    if isinstance(value, Price):
        return value
    try:
        return Price(float(value["input_per_mtok"]), float(value["output_per_mtok"]))
    except (KeyError, TypeError, ValueError):
        raise ValueError(
            f"price for {spec} needs input_per_mtok and output_per_mtok (USD per million tokens)"
        ) from None


class PriceTable:
    """The defaults plus overrides; ``cost(spec, in, out)`` in USD or ``None`` if unknown."""

    def __init__(
        self,
        overrides: Mapping[str, Price | Mapping[str, Any]] | None = None,
        free: Iterable[str] = (),
    ) -> None:
        """``free``: providers whose calls cost nothing (their specs' price is 0, not unknown)."""
        self._free = tuple(f"{name}/" for name in free)
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES)
        for spec, value in (overrides or {}).items():
            self._prices[spec] = _as_price(spec, value)
        self._cache: dict[str, Price | None] = {}

    def price(self, spec: str) -> Price | None:
        """The price for ``spec``: 0 for a free provider's (local, scripted), ``None`` when not
        known."""
        try:
            return self._cache[spec]
        except KeyError:
            pass
        price = match_family(spec, self._prices)
        if price is None and spec.startswith(self._free):
            price = Price(0.0, 0.0)
        self._cache[spec] = price
        return price

    def cost(self, spec: str, input_tokens: int, output_tokens: int) -> float | None:
        price = self.price(spec)
        return None if price is None else price.cost(input_tokens, output_tokens)

    def __repr__(self) -> str:
        return f"PriceTable({len(self._prices)} prices)"
