"""The leaderboard: every model under evaluation's scores on the target scorers, by judge, over
all configs — the table a benchmark such as psychosis-bench reports (mean DCS, HES and SIS by
model), built from the runs alone, without a judge call.

Why its own table: an imported run holds rollouts of several models (one psychosis-bench
profile played against GPT-4.1, GPT-4o, Claude...), and what such a run's source concluded is
kept as **reference** scores beside loom-sim's own. A reader wants both judges' numbers side by
side, one group of rows per model, and not a mean that quietly includes a conversation cut
short by an API error. So:

* **Rows**: per model under evaluation, one row per judge — the reference judge's scores
  (``TurnRecord.reference``) when any rollout has them, loom-sim's when any rollout has a
  score of a target scorer (DCS, HES, SIS...). Runs with neither have no leaderboard.
* **The unit**: each complete rollout gives one value per scorer (its turn values aggregated
  the scorer's registered way). **Incomplete** rollouts — fewer turns than planned, or not
  done — are counted and listed with their turns, never averaged in.
* **Intervals follow the scale** (:func:`interval_kind`): a score on an ordinal scale (DCS and
  HES, 0-2) is a mean over rollouts with a percentile-bootstrap interval; a yes/no score
  per turn (SIS: did the reply point to help) is a rate of the turns it was scored on, with a
  Wilson interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from loom_sim.intervals import bootstrap_mean, rate
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.scoring.aggregate import aggregate, aggregation_of
from loom_sim.runs.load import RolloutResult
from loom_sim.runs.scores import FAILED, SCORED, state
from loom_sim.store.records import Score, Transcript, TurnRecord

__all__ = ["MEAN", "RATE", "build_board", "interval_kind", "model_of", "models_by_rollout"]

RATE, MEAN = "rate", "mean"
#: Scorers with a table of their own (Spiral-Bench's: its aggregation is not a mean of turns).
OWN_TABLES = ("spiral", "spiral_final")
REFERENCE, OWN = "reference", "loom-sim"
_NOT_MODELS = ("persona", "judge")


def interval_kind(scorer: str) -> str:
    """How a scorer's values are summed up over rollouts: ``rate`` (a yes/no per turn:
    Wilson interval on the share of turns) or ``mean`` (bootstrap over rollouts).

    The scorer's declared kind decides (:data:`loom_sim.plugins.scorers.KINDS`), never the
    values a run happened to give: a 0-2 DCS whose values are all 0 or 1 is still a mean. A
    scorer loom-sim does not know (another tool's) is a mean: nothing says it is yes/no."""
    return RATE if scorer in SCORERS and SCORERS.get(scorer).kind == "rate" else MEAN


# ─── the model under evaluation of each rollout ─────────────────────────────


def model_of(transcript: Transcript) -> str | None:
    """The model a rollout evaluated, as its transcript records it (its interlocutor, or the
    one role that is neither persona nor judge)."""
    models = transcript.models or {}
    return models.get("interlocutor") or next(
        (spec for role, spec in models.items() if role not in _NOT_MODELS and spec), None
    )


def models_by_rollout(rollouts: Sequence[RolloutResult]) -> dict[int, str]:
    """Each rollout's column (by ``id``): its cell's target, except in a run whose rollouts
    evaluated several models (an import of one profile played against several assistants),
    where each rollout goes to the model its transcript names."""
    seen: dict[tuple[str, str], set[str]] = {}
    for r in rollouts:
        seen.setdefault((r.run, r.arm.key), set()).add(model_of(r.transcript) or r.target)
    return {
        id(r): (model_of(r.transcript) or r.target)
        if len(seen[(r.run, r.arm.key)]) > 1
        else r.target
        for r in rollouts
    }


# ─── the table ──────────────────────────────────────────────────────────────


def _planned(r: RolloutResult) -> int:
    reference = r.transcript.reference
    if reference is not None and reference.planned_turns:
        return reference.planned_turns
    return r.arm.record.turns


def incomplete(r: RolloutResult) -> bool:
    """A rollout that stopped short: not done (an error, still going, killed), or an imported
    one with fewer turns than its source planned (its source stopped on an API error). A
    loom-sim rollout that a stop rule ended early is complete: the stop is its result."""
    if r.status != "done":
        return True
    reference = r.transcript.reference
    planned = reference.planned_turns if reference is not None else None
    return planned is not None and len(r.transcript.turns) < planned


def _values(records: list[TurnRecord], scorer: str, pick: Callable) -> list[float | None]:
    """The turn values of ``scorer`` (None for a failed turn); turns it did not apply to or
    never scored are left out."""
    found: list[float | None] = []
    for record in records:
        score: Score | None = pick(record).get(scorer)
        if score is None or state(score) not in (SCORED, FAILED):
            continue
        found.append(float(score.value) if state(score) == SCORED else None)  # type: ignore[arg-type]
    return found


def _cell(kind: str, scorer: str, per_rollout: list[list[float | None]]) -> dict[str, Any]:
    """One scorer over one model's complete rollouts."""
    if kind == RATE:
        outcomes = [v for values in per_rollout for v in values if v is not None]
        found = rate(int(sum(outcomes)), len(outcomes))
        return {
            **found.to_dict(),
            "kind": RATE,
            "successes": int(sum(outcomes)),
            "turns": len(outcomes),
            "rollouts": sum(1 for values in per_rollout if any(v is not None for v in values)),
        }
    headlines = [
        aggregate(values, aggregation_of(scorer)).headline
        for values in per_rollout
        if any(v is not None for v in values)
    ]
    found = bootstrap_mean([h for h in headlines if h is not None])
    return {
        **found.to_dict(),
        "kind": MEAN,
        "no_value": len(per_rollout) - len(headlines),
        "values": [round(h, 6) for h in headlines if h is not None],
    }


def _scorers(rollouts: Sequence[RolloutResult], pick: Callable, target_only: bool) -> list[str]:
    seen: dict[str, None] = {}
    for r in rollouts:
        for record in r.transcript.turns:
            seen.update(dict.fromkeys(pick(record)))
    names = [n for n in SCORERS.names() if n in seen] + sorted(n for n in seen if n not in SCORERS)
    names = [n for n in names if n not in OWN_TABLES]
    if target_only:
        names = [n for n in names if n in SCORERS and SCORERS.get(n).subject == "target"]
    return names


def _row(
    model: str,
    judge: str,
    judged_by: list[str],
    members: list[RolloutResult],
    scorers: list[str],
    pick: Callable,
) -> dict[str, Any]:
    complete = [r for r in members if not incomplete(r)]
    cut = [r for r in members if incomplete(r)]
    scores = {}
    for scorer in scorers:
        per_rollout = [_values(r.transcript.turns, scorer, pick) for r in complete]
        scores[scorer] = _cell(interval_kind(scorer), scorer, per_rollout)
    return {
        "model": model,
        "judge": judge,
        "judged_by": judged_by,
        "rollouts": len(members),
        "complete": len(complete),
        "configs": list(dict.fromkeys(r.config for r in members)),
        "incomplete": [
            {
                "run": r.run,
                "rollout": r.transcript.rollout,
                "turns": len(r.transcript.turns),
                "planned_turns": _planned(r),
                "status": r.status,
                "detail": r.transcript.stop_detail or r.transcript.error or "",
            }
            for r in cut
        ],
        "scores": scores,
    }


def build_board(every: Sequence[RolloutResult]) -> dict[str, Any] | None:
    """The leaderboard of ``every`` started rollout (those without a turn too: they are
    counted as incomplete), or None when no rollout has scores of the model under evaluation
    (loom-sim's target scorers, or an import's reference) — a persona-only comparison is the
    per-config table's."""

    def reference(record: TurnRecord) -> dict[str, Score]:
        return record.reference

    def own(record: TurnRecord) -> dict[str, Score]:
        return record.scores

    ref_scorers = _scorers(every, reference, target_only=False)
    own_scorers = _scorers(every, own, target_only=True)
    if not ref_scorers and not own_scorers:
        return None
    scorers = list(dict.fromkeys([*ref_scorers, *own_scorers]))
    column = models_by_rollout(every)
    models: dict[str, list[RolloutResult]] = {}
    for r in every:
        models.setdefault(column[id(r)], []).append(r)
    rows = []
    for model, members in models.items():
        ref_judges = sorted(
            {
                f"{t.reference.source}"
                + (f", judge {t.reference.judge}" if t.reference.judge else "")
                for t in (m.transcript for m in members)
                if t.reference is not None
            }
        )
        if ref_scorers:
            rows.append(_row(model, REFERENCE, ref_judges, members, ref_scorers, reference))
        if own_scorers:
            judges = sorted({m.transcript.scores.judge for m in members if m.transcript.scores})
            rows.append(_row(model, OWN, judges, members, own_scorers, own))
    return {"scorers": scorers, "rows": rows}
