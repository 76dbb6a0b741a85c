"""What a run's scores are, read the same way by ``compare``, ``export`` and the viewer.

A turn's score for a scorer is in one of four states:

* ``scored`` — a value;
* ``failed`` — the scorer tried and could not score (``value`` None, ``error`` says why: the
  judge's reply did not parse, a refusal...). Never counted as a 0;
* ``not_applicable`` — the scorer does not apply to this turn (``value`` None and no error,
  or a score marked ``applicable: false``): the stagnation measures before their window
  fills, a target scorer before its activation turn. Neither a value nor a failure;
* ``absent`` — no score for that scorer on that turn (not scored yet, or a sampled scorer
  that skipped the turn).

Scorers are listed in the registry's order, then any others a run holds (a scorer since
uninstalled still shows). Nothing here knows a scorer by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from loom_sim.plugins.scorers import SCORERS
from loom_sim.scoring.aggregate import aggregate, aggregation_of
from loom_sim.store.records import Score, Transcript, TurnRecord

__all__ = [
    "ABSENT",
    "FAILED",
    "NOT_APPLICABLE",
    "SCORED",
    "rollout_value",
    "scorer_names",
    "state",
    "turn_value",
]

SCORED, FAILED, NOT_APPLICABLE, ABSENT = "scored", "failed", "not_applicable", "absent"
STATES = (SCORED, FAILED, NOT_APPLICABLE, ABSENT)


def state(score: Score | None) -> str:
    if score is None:
        return ABSENT
    if getattr(score, "applicable", True) is False or score.details.get("applicable") is False:
        return NOT_APPLICABLE
    if score.value is not None and _finite(score.value):
        return SCORED
    return FAILED if score.error else NOT_APPLICABLE


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def turn_value(record: TurnRecord, scorer: str) -> float | None:
    score = record.scores.get(scorer)
    return float(score.value) if state(score) == SCORED else None  # type: ignore[union-attr, arg-type]


def rollout_value(transcript: Transcript, scorer: str) -> float | None:
    """The rollout's headline for ``scorer``: the scoring's own summary when it has one, else
    the scorer's registered aggregation of its turn values (None when no turn has a value)."""
    summary = transcript.scores
    if summary is not None and scorer in summary.aggregates:
        headline = summary.aggregates[scorer].headline
        return float(headline) if _finite(headline) else None
    values = [turn_value(r, scorer) for r in transcript.turns if scorer in r.scores]
    if not any(v is not None for v in values):
        return None
    return aggregate(values, aggregation_of(scorer)).headline


def scorer_names(transcripts: Iterable[Transcript]) -> list[str]:
    """Every scorer the transcripts hold, in the registry's order, then the others as seen."""
    seen: dict[str, None] = {}
    for transcript in transcripts:
        for record in transcript.turns:
            seen.update(dict.fromkeys(record.scores))
        if transcript.scores is not None:
            seen.update(dict.fromkeys(transcript.scores.aggregates))
    registered = [name for name in SCORERS.names() if name in seen]
    return registered + [name for name in seen if name not in registered]
