"""Scorers: what scores a turn, and the facts about it every other part reads.

A scorer is a class with ``async def score(self, turn) -> Score`` (see
:mod:`loom_sim.scoring.base`), registered where it is defined::

    @scorer("politeness", needs_judge=False, order=70, summary="thanks and please, per turn")
    class Politeness(Scorer): ...

From here come the config's ``evaluation.scoring`` keys and their settings (validated, in the
JSON Schema), the engine's list of scorers, the report's column order and the docs' table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from loom_sim.plugins import Plugin, PluginError, Registry

__all__ = ["AGGREGATIONS", "SCORERS", "ScorerInfo", "scorer"]

#: How a rollout's per-turn values become its headline value.
AGGREGATIONS = ("mean", "median", "min", "max")


@dataclass(frozen=True, kw_only=True)
class ScorerInfo(Plugin):
    scorer: Callable[[Any], Any]  # the class: scorer(settings) -> a Scorer
    config_key: str  # its section under evaluation.scoring
    settings: type[BaseModel] | None = None  # None: the plain switch (enabled, description)
    needs_judge: bool = False  # asks the judge model (costs calls); else deterministic
    aggregation: str = "mean"


SCORERS: Registry[ScorerInfo] = Registry("scorer", "loom_sim.scorers")

C = TypeVar("C", bound=type)


def scorer(
    name: str,
    *,
    needs_judge: bool,
    order: int = 100,
    summary: str = "",
    config_key: str | None = None,
    settings: type[BaseModel] | None = None,
    aggregation: str = "mean",
) -> Callable[[C], C]:
    """Register the decorated class as scorer ``name``; ``config_key`` (default ``name``) is its
    section under ``evaluation.scoring``, ``settings`` that section's model."""
    if aggregation not in AGGREGATIONS:
        raise PluginError(
            f"scorer {name!r}: unknown aggregation {aggregation!r}; use one of "
            + ", ".join(AGGREGATIONS)
        )

    def register(cls: C) -> C:
        SCORERS.add(
            ScorerInfo(
                name=name,
                scorer=cls,
                config_key=config_key or name,
                settings=settings,
                needs_judge=needs_judge,
                aggregation=aggregation,
                order=order,
                summary=summary,
            )
        )
        return cls

    return register
