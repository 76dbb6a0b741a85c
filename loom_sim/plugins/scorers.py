"""Scorers: what scores a turn, and the facts about it every other part reads.

A scorer is a class with ``async def score(self, turn) -> Score`` (see
:mod:`loom_sim.rollout.scoring.base`), registered where it is defined::

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

__all__ = [
    "AGGREGATIONS",
    "KINDS",
    "SCORERS",
    "SUBJECTS",
    "ScorerInfo",
    "scorer",
    "target_scorers",
]

#: How a rollout's per-turn values become its headline value.
AGGREGATIONS = ("mean", "median", "min", "max")

#: Whose behaviour a scorer judges: the persona simulator, or the model under evaluation (the
#: target). Target scorers run only when a config lists them (``evaluation.scoring.target``).
SUBJECTS = ("persona", "target")

#: What a scorer's values are, which decides how they are summed up over rollouts: ``mean``
#: (a graded value on its scale: a mean with a bootstrap interval) or ``rate`` (a yes/no per
#: turn, 1 or 0: a share of turns with a Wilson interval). Declared, never guessed from the
#: values: a 0-2 score whose values happen to be 0 or 1 is still graded.
KINDS = ("mean", "rate")

#: Keys of ``evaluation.scoring`` that are not scorer sections.
RESERVED_KEYS = ("target",)


@dataclass(frozen=True, kw_only=True)
class ScorerInfo(Plugin):
    scorer: Callable[[Any], Any]  # the class: scorer(settings) -> a Scorer
    config_key: str  # its section under evaluation.scoring
    settings: type[BaseModel] | None = None  # None: the plain switch (enabled, description)
    needs_judge: bool = False  # asks the judge model (costs calls); else deterministic
    aggregation: str = "mean"
    subject: str = "persona"  # whose behaviour it scores (see SUBJECTS)
    scale: tuple[float, float] = (0.0, 1.0)  # the range of its values
    kind: str = "mean"  # mean | rate (see KINDS): how its values are summed up and shown
    higher_is_better: bool = True
    flags: bool = True  # a poor value flags its turn for a reader's attention
    asks_persona: bool = False  # may question the persona (scored after the turn's others)

    def goodness(self, value: float) -> float:
        """``value`` on 0..1, 1 the best the scale allows: what colours and flags read."""
        low, high = self.scale
        share = (value - low) / (high - low) if high > low else 0.0
        share = min(1.0, max(0.0, share))
        return share if self.higher_is_better else 1.0 - share


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
    subject: str = "persona",
    scale: tuple[float, float] = (0.0, 1.0),
    kind: str = "mean",
    higher_is_better: bool = True,
    flags: bool = True,
    asks_persona: bool = False,
) -> Callable[[C], C]:
    """Register the decorated class as scorer ``name``; ``config_key`` (default ``name``) is its
    section under ``evaluation.scoring``, ``settings`` that section's model. A ``target``
    scorer judges the model under evaluation and runs when the config lists it; its values
    may use a ``scale`` of their own (psychosis-bench's DCS is 0-2, lower is better). ``kind``
    says whether a value is graded (``mean``) or a yes/no per turn (``rate``, on a 0-1 scale):
    intervals and display follow it, whatever values a run happened to give."""
    if aggregation not in AGGREGATIONS:
        raise PluginError(
            f"scorer {name!r}: unknown aggregation {aggregation!r}; use one of "
            + ", ".join(AGGREGATIONS)
        )
    if subject not in SUBJECTS:
        raise PluginError(
            f"scorer {name!r}: unknown subject {subject!r}; use one of " + ", ".join(SUBJECTS)
        )
    if kind not in KINDS:
        raise PluginError(f"scorer {name!r}: unknown kind {kind!r}; use one of " + ", ".join(KINDS))
    if kind == "rate" and tuple(scale) != (0.0, 1.0):
        raise PluginError(
            f"scorer {name!r}: a rate is a yes/no per turn, on the scale (0, 1), not {scale}"
        )
    if (config_key or name) in RESERVED_KEYS:
        raise PluginError(
            f"scorer {name!r}: evaluation.scoring.{config_key or name} is taken; "
            "give the scorer another config_key"
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
                subject=subject,
                scale=scale,
                kind=kind,
                higher_is_better=higher_is_better,
                flags=flags,
                order=order,
                summary=summary,
                asks_persona=asks_persona,
            )
        )
        return cls

    return register


def target_scorers() -> list[ScorerInfo]:
    """The registered scorers of the model under evaluation, in registry order."""
    return [info for info in SCORERS if info.subject == "target"]
