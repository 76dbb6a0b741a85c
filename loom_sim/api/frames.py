"""A run's results as pandas data frames: one row a turn, one row a rollout, one row a
(config, target, scorer) of the comparison, one row a difference between two targets.

Frames are what a researcher reaches for in a notebook (filter, group, plot), as Inspect's log
data frames are. They are read from the same loaders ``compare``, ``export`` and the viewer
use (:mod:`loom_sim.runs`), so a number here is the number those show. Score columns are
``score_<scorer>`` (and ``reference_<scorer>`` for an imported transcript's own judge), so a
scorer's name can never collide with a fixed column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loom_sim.runs.load import RolloutResult, RunResults
from loom_sim.runs.scores import rollout_value, scorer_names

if TYPE_CHECKING:
    import pandas as pd


def _pandas() -> Any:
    """pandas, imported on first use: the command line never pays for it."""
    import pandas

    return pandas


def _where(r: RolloutResult) -> dict[str, Any]:
    return {
        "run": r.run,
        "arm": r.cell.arm,
        "config": r.config,
        "target": r.target,
        "rollout": r.cell.rollout,
        "seed": r.cell.seed,
    }


def _started(results: Sequence[RunResults]) -> list[RolloutResult]:
    return [r for run in results for r in run.rollouts]


def turns_frame(results: Sequence[RunResults]) -> pd.DataFrame:
    """One row per completed turn (counted from 1): where it ran, its phase, both messages,
    and every score (``None`` where a scorer gave no value: failed, or not applicable)."""
    rows = []
    for r in _started(results):
        for t in r.transcript.turns:
            row = {
                **_where(r),
                "turn": t.turn + 1,  # turns count from 1, as everywhere a user reads them
                "phase": t.phase,
                "persona": t.persona,
                "interlocutor": t.interlocutor,
            }
            for name, score in t.scores.items():
                row[f"score_{name}"] = score.value
            for name, score in t.reference.items():
                row[f"reference_{name}"] = score.value
            rows.append(row)
    return _pandas().DataFrame(rows, columns=_columns(rows, "turn"))


def rollouts_frame(results: Sequence[RunResults]) -> pd.DataFrame:
    """One row per started rollout: its outcome, size, cost and each scorer's headline (the
    scorer's registered aggregation of its turns, as the report and ``compare`` use)."""
    started = _started(results)
    scorers = scorer_names(r.transcript for r in started)
    rows = []
    for r in started:
        t = r.transcript
        row = {
            **_where(r),
            "status": t.status,
            "stop_reason": t.stop_reason,
            "turns": len(t.turns),
            "cost_usd": t.cost_usd,
            "duration_s": t.duration_s,
            "flags": len(t.scores.flagged) if t.scores else None,
        }
        for name in scorers:
            row[f"score_{name}"] = rollout_value(t, name)
        rows.append(row)
    return _pandas().DataFrame(rows, columns=_columns(rows, "flags"))


def compare_frame(data: dict[str, Any]) -> pd.DataFrame:
    """One row per (config, target, scorer) of ``compare``'s table: the mean over rollouts,
    its 95% interval and how it was made (a Wilson rate or a bootstrap mean)."""
    rows = []
    for config, by_target in data["table"].items():
        for target, cell in by_target.items():
            for scorer, found in cell["scores"].items():
                low, high = found.get("ci95") or (None, None)
                rows.append(
                    {
                        "config": config,
                        "target": target,
                        "scorer": scorer,
                        "rollouts": cell["rollouts"],
                        "mean": found["mean"],
                        "ci_low": low,
                        "ci_high": high,
                        "n": found["n"],
                        "method": found["method"],
                        "no_value": found["no_value"],
                    }
                )
    return _pandas().DataFrame(rows, columns=_FIXED_COMPARE)


def differences_frame(data: dict[str, Any]) -> pd.DataFrame:
    """One row per (config, pair of targets, scorer): ``b - a``, its interval, whether the
    rollouts were paired (same config and seed), and whether it is within noise."""
    rows = []
    for d in data["differences"]:
        low, high = d.get("ci95") or (None, None)
        rows.append(
            {
                "config": d["config"],
                "scorer": d["scorer"],
                "a": d["a"],
                "b": d["b"],
                "difference": d["estimate"],
                "ci_low": low,
                "ci_high": high,
                "p_value": d.get("p_value"),
                "paired": d["paired"],
                "within_noise": d["within_noise"],
                "sentence": d["sentence"],
            }
        )
    return _pandas().DataFrame(rows, columns=_FIXED_DIFFERENCES)


_FIXED_COMPARE = [
    "config",
    "target",
    "scorer",
    "rollouts",
    "mean",
    "ci_low",
    "ci_high",
    "n",
    "method",
    "no_value",
]
_FIXED_DIFFERENCES = [
    "config",
    "scorer",
    "a",
    "b",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "paired",
    "within_noise",
    "sentence",
]


def _columns(rows: list[dict[str, Any]], last_fixed: str) -> list[str]:
    """The fixed columns (up to ``last_fixed``) even for an empty frame, then the score
    columns in the order they first appear."""
    fixed = ["run", "arm", "config", "target", "rollout", "seed"]
    if last_fixed == "turn":
        fixed += ["turn", "phase", "persona", "interlocutor"]
    else:
        fixed += ["status", "stop_reason", "turns", "cost_usd", "duration_s", "flags"]
    seen = dict.fromkeys(fixed)
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)
