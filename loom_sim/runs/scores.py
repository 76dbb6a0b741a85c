"""What a run's scores are, read the same way by ``compare``, ``export`` and the viewer.

A turn's score for a scorer is in one of four states:

* ``scored`` — a value;
* ``failed`` — the scorer tried and could not score (``value`` None, ``error`` says why: the
  judge's reply did not parse, a refusal...). Never counted as a 0;
* ``not_applicable`` — the scorer does not apply to this turn: a score that says so (its
  ``not_applicable`` reason, or ``applicable: false`` in its details), or, in records that
  have no such field, ``value`` None without an error: a target scorer before its activation
  turn. Neither a value nor a failure;
* ``absent`` — no score for that scorer on that turn (not scored yet, or a sampled scorer
  that skipped the turn).

Scorers are listed in the registry's order, then any others a run holds (a scorer since
uninstalled still shows). Nothing here knows a scorer by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.scoring.aggregate import aggregate, aggregation_of
from loom_sim.store.records import Score, Transcript, TurnRecord

__all__ = [
    "ABSENT",
    "FAILED",
    "NOT_APPLICABLE",
    "SCORED",
    "goodness",
    "higher_is_better",
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
    if (
        getattr(score, "not_applicable", None) is not None
        or score.details.get("applicable") is False
    ):
        return NOT_APPLICABLE
    if score.value is not None and _finite(score.value):
        return SCORED
    if score.error:
        return FAILED
    # No value and no reason: the record's own word when it has one (a Score with a `state`),
    # else "not applicable", which is what such a score meant before scores could say so.
    own = getattr(score, "state", None)
    return own if own in (FAILED, NOT_APPLICABLE) else NOT_APPLICABLE


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
        return float(headline) if headline is not None and _finite(headline) else None
    values = [turn_value(r, scorer) for r in transcript.turns if scorer in r.scores]
    if not any(v is not None for v in values):
        return None
    return aggregate(values, aggregation_of(scorer)).headline


def higher_is_better(scorer: str) -> bool:
    """What the registered scorer says (True for one that says nothing, or is not installed)."""
    return (
        bool(getattr(SCORERS.get(scorer), "higher_is_better", True)) if scorer in SCORERS else True
    )


def goodness(scorer: str, value: float | None) -> float | None:
    """``value`` on 0..1 with 1 the best its scale allows (what colours read): the scorer's
    own ``goodness`` when it declares a scale, else the value itself."""
    if value is None:
        return None
    info = SCORERS.get(scorer) if scorer in SCORERS else None
    measure = getattr(info, "goodness", None)
    return float(measure(value)) if measure is not None else value


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
