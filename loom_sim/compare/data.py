"""Every number of a comparison: per config and per target, each scorer's mean with its 95 %
interval, rates, paired differences, and per-turn curves.

One function (:func:`build_compare`) reads the runs and returns plain JSON data; the terminal,
Markdown and HTML renderers only format it, so they never disagree (the same shape as the
single-run report). It serves ``loom-sim compare RUN_DIR…`` and a matrix run's report.

How the numbers are made:

* **The unit is the rollout.** A rollout's value for a scorer is its headline over its turns
  (the scoring's summary; the scorer's registered aggregation). Turns are not independent, so
  intervals are over rollouts, never over pooled turns.
* **Means** get a percentile-bootstrap 95 % interval; when every rollout's value is 0 or 1 (a
  pass/fail scorer) the mean is a rate and gets a Wilson interval. ``--rate`` defines rates of
  its own: rollouts whose headline passes a threshold, or that reached it by turn K.
* **Differences** between two targets on one config are *paired* when the same config and seed
  ran against both (a matrix run's arms share their seed; two single runs made with the same
  ``--seed`` do too): the rollout with index i against one target is compared with rollout i
  against the other, and the pairs' differences are bootstrapped. Otherwise the two samples
  are bootstrapped separately. A difference whose interval contains 0 is said, in a plain
  sentence, to be within noise; one whose interval leaves 0 is called more than noise only if
  an exact test (sign test for pairs, permutation test otherwise) agrees at the 5 % level —
  the bootstrap alone is too confident on a handful of rollouts.
* **Scores that are not values** — a failure (``None`` with a reason) or a turn the scorer does
  not apply to — are never counted as 0: they are left out and counted apart.

Nothing here knows a scorer by name: every scorer a run holds is compared, in the registry's
order.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_sim.compare.board import RATE, build_board, interval_kind, models_by_rollout
from loom_sim.compare.spiral import build_spiral
from loom_sim.errors import LoomError
from loom_sim.intervals import ALPHA, Interval, bootstrap_difference, bootstrap_mean, rate
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.report.data import EMBEDDED_JUDGE, EMBEDDED_NOTICE, SCRIPTED_NOTICE
from loom_sim.runs.load import RolloutResult, RunResults, load_results
from loom_sim.runs.scores import higher_is_better, rollout_value, scorer_names, turn_value

__all__ = ["COMPARE_VERSION", "RateSpec", "build_compare", "parse_rate"]

COMPARE_VERSION = "1"
ALL_CONFIGS = "all configs"
_RATE = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(>=|<=|>|<)\s*(-?[0-9.]+)\s*(?:@\s*([0-9]+))?\s*$")


@dataclass(frozen=True)
class RateSpec:
    """A rate over rollouts: ``scorer >= 0.7`` (the rollout's headline passes), or
    ``scorer <= 0.2 @ 5`` (some turn among its first 5 reached it: "first X by turn K")."""

    scorer: str
    op: str
    threshold: float
    by_turn: int | None = None

    @property
    def name(self) -> str:
        text = f"{self.scorer}{self.op}{self.threshold:g}"
        return text + (f"@{self.by_turn}" if self.by_turn is not None else "")

    def test(self, value: float) -> bool:
        return {
            ">=": value >= self.threshold,
            "<=": value <= self.threshold,
            ">": value > self.threshold,
            "<": value < self.threshold,
        }[self.op]

    def outcome(self, rollout: RolloutResult) -> bool | None:
        """Whether the rollout counts as a success; None when it has no value to judge by."""
        t = rollout.transcript
        if self.by_turn is None:
            value = rollout_value(t, self.scorer)
            return None if value is None else self.test(value)
        values = [turn_value(r, self.scorer) for r in t.turns[: self.by_turn]]
        present = [v for v in values if v is not None]
        if any(self.test(v) for v in present):
            return True
        # Not reached: a success is ruled out only if the rollout got that far with values.
        return False if present and len(t.turns) >= self.by_turn else None


def parse_rate(text: str) -> RateSpec:
    match = _RATE.match(text)
    if match is None:
        raise LoomError(
            f"--rate {text!r}: write SCORER>=X (the rollout's value passes X) or "
            "SCORER<=X@K (some turn among the first K reached it), e.g. persona_adherence>=0.7"
        )
    scorer, op, threshold, by_turn = match.groups()
    try:
        value = float(threshold)
    except ValueError:
        raise LoomError(f"--rate {text!r}: {threshold!r} is not a number") from None
    if by_turn is not None and int(by_turn) < 1:
        raise LoomError(f"--rate {text!r}: @K counts turns from 1")
    return RateSpec(scorer, op, value, int(by_turn) if by_turn else None)


def _check_rates(rates: Sequence[RateSpec], scorers: list[str]) -> None:
    """A rate on a scorer that neither the runs hold nor loom-sim knows (a typo) would be an
    empty column, read as "no rollout passed": refused, naming the scorers there are."""
    known = list(dict.fromkeys([*scorers, *SCORERS.names()]))
    for spec in rates:
        if spec.scorer in known:
            continue
        close = difflib.get_close_matches(spec.scorer, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise LoomError(
            f"--rate {spec.name!r}: no scorer named {spec.scorer!r}; {hint}"
            f"the scorers are: {', '.join(scorers or known)}"
        )


# ─── grouping ───────────────────────────────────────────────────────────────


def _variants(rollouts: list[RolloutResult], target: dict[int, str]) -> dict[int, str]:
    """Each rollout's column: its model under evaluation (the transcript's own in a run of
    several models, such as an import), qualified by its run's name when the same config and
    target appear in several runs compared (a judge change, a new system prompt)."""
    runs_of: dict[tuple[str, str], set[str]] = {}
    for r in rollouts:
        runs_of.setdefault((r.config, target[id(r)]), set()).add(r.run)
    return {
        id(r): target[id(r)]
        if len(runs_of[(r.config, target[id(r)])]) == 1
        else f"{target[id(r)]} @ {r.run}"
        for r in rollouts
    }


def _pair_key(r: RolloutResult) -> tuple[str, int, int | str]:
    """Rollouts with the same config content, seed and index made the same persona choices.
    Imported ones did not (another tool's persona spoke): each is a key of its own."""
    if r.transcript.reference is not None:
        return (r.arm.record.config_sha256, r.arm.record.seed, f"{r.run}/{r.cell.id}")
    return (r.arm.record.config_sha256, r.arm.record.seed, r.cell.rollout)


def _summary(scorer: str, values: list[float | None]) -> dict[str, Any]:
    """One scorer's rollout values: a Wilson rate only for a scorer declared a rate whose
    rollout values are themselves yes/no; a mean otherwise, whatever values it took (a 0-2
    score that happened to be 0 or 1 keeps its scale)."""
    present = [v for v in values if v is not None]
    binary = bool(present) and all(v in (0.0, 1.0) for v in present)
    yes_no = binary and interval_kind(scorer) == RATE
    found = rate(int(sum(present)), len(present)) if yes_no else bootstrap_mean(present)
    return {
        **found.to_dict(),
        "mean": found.to_dict()["estimate"],
        "no_value": len(values) - len(present),
        "values": [None if v is None else round(v, 6) for v in values],
    }


def _difference(
    scorer: str,
    a: str,
    b: str,
    first: list[RolloutResult],
    second: list[RolloutResult],
) -> dict[str, Any]:
    """``b - a`` for one scorer: paired when both sides have rollouts of the same key."""
    va = {_pair_key(r): rollout_value(r.transcript, scorer) for r in first}
    vb = {_pair_key(r): rollout_value(r.transcript, scorer) for r in second}
    pairs = [(x, y) for k, x in va.items() if x is not None and (y := vb.get(k)) is not None]
    if pairs:
        found = bootstrap_difference([y for _, y in pairs], [x for x, _ in pairs], paired=True)
    else:
        found = bootstrap_difference(
            [v for v in vb.values() if v is not None],
            [v for v in va.values() if v is not None],
            paired=False,
        )
    within = found.contains(0.0)
    if within is False and (found.p_value is None or found.p_value >= ALPHA):
        within = None  # the interval leaves 0, but too few rollouts for the exact test
    return {
        "scorer": scorer,
        "a": a,
        "b": b,
        **found.to_dict(),
        "paired": bool(pairs),
        "within_noise": within,
        "sentence": _sentence(scorer, a, b, found, bool(pairs)),
    }


def _sentence(name: str, a: str, b: str, found: Interval, paired: bool) -> str:
    scorer = name if higher_is_better(name) else f"{name} (lower is better)"
    if found.estimate is None:
        return f"{scorer}: no rollouts of both {a} and {b} have a value to compare."
    how = f"{'paired' if paired else 'unpaired'}, {found.n} rollout{'s' * (found.n != 1)}"
    diff = f"{b} − {a} = {found.estimate:+.2f}".replace("-", "−")
    if found.low is None or found.high is None:
        return f"{scorer}: {diff} ({how}): too few rollouts to tell it from noise."
    if paired and found.low == found.high == found.estimate == 0.0:
        return f"{scorer}: the same for {a} and {b} in every pair ({how}): no difference."
    ci = f"95% CI {found.low:+.2f} to {found.high:+.2f}".replace("-", "−")
    if found.contains(0.0):
        return f"{scorer}: {diff} ({ci}, {how}): within noise — no difference can be claimed."
    test = f"{'sign' if paired else 'permutation'} test p = {found.p_value:.2g}"
    if found.p_value is None or found.p_value >= ALPHA:
        return (
            f"{scorer}: {diff} ({ci}, {how}): the interval leaves 0, but the rollouts are too "
            f"few or too mixed to call it more than noise ({test}); run more rollouts."
        )
    direction = "higher" if found.estimate > 0 else "lower"
    return (
        f"{scorer}: {b} scores {abs(found.estimate):.2f} {direction} than {a} "
        f"({ci}, {how}, {test}): more than noise."
    )


def _curve(rollouts: list[RolloutResult], scorer: str) -> list[float | None]:
    """The mean value at each turn over the rollouts (None where no rollout has one)."""
    by_turn: dict[int, list[float]] = {}
    for r in rollouts:
        for record in r.transcript.turns:
            value = turn_value(record, scorer)
            if value is not None:
                by_turn.setdefault(record.turn, []).append(value)
            else:
                by_turn.setdefault(record.turn, [])
    if not by_turn:
        return []
    return [
        round(sum(v) / len(v), 6) if (v := by_turn.get(t)) else None
        for t in range(max(by_turn) + 1)
    ]


# ─── the comparison ─────────────────────────────────────────────────────────


def build_compare(
    run_dirs: Sequence[Path | str] | Sequence[RunResults], rates: Sequence[RateSpec] = ()
) -> dict[str, Any]:
    """Every number of the comparison of ``run_dirs`` (single runs or matrices, mixed)."""
    results = [r if isinstance(r, RunResults) else load_results(Path(r)) for r in run_dirs]
    if not results:
        raise LoomError("compare needs at least one run directory")
    every = [r for run in results for r in run.rollouts]  # the cells that started
    rollouts = [r for r in every if r.transcript.turns]
    if not rollouts:
        raise LoomError(
            "nothing to compare yet: no rollout of "
            + ", ".join(run.name for run in results)
            + " has a completed turn"
        )
    variant = _variants(rollouts, models_by_rollout(every))
    configs = list(dict.fromkeys(r.config for r in rollouts))
    targets = list(dict.fromkeys(variant[id(r)] for r in rollouts))
    scorers = scorer_names(r.transcript for r in rollouts)
    _check_rates(rates, scorers)
    groups: dict[str, dict[str, list[RolloutResult]]] = {}
    for r in rollouts:
        groups.setdefault(r.config, {}).setdefault(variant[id(r)], []).append(r)
    if len(configs) > 1:
        for r in rollouts:
            groups.setdefault(ALL_CONFIGS, {}).setdefault(variant[id(r)], []).append(r)
    rows = [*configs, ALL_CONFIGS] if len(configs) > 1 else configs

    table: dict[str, dict[str, Any]] = {}
    for config in rows:
        table[config] = {}
        for target in targets:
            members = groups[config].get(target, [])
            table[config][target] = {
                "rollouts": len(members),
                "turns": sum(len(m.transcript.turns) for m in members),
                "statuses": _count(m.status for m in members),
                "cost_usd": _cost(members),
                "flagged_turns": sum(
                    len(m.transcript.scores.flagged) for m in members if m.transcript.scores
                ),
                "scores": {
                    s: _summary(s, [rollout_value(m.transcript, s) for m in members])
                    for s in scorers
                },
                "rates": {spec.name: _rate([spec.outcome(m) for m in members]) for spec in rates},
            }

    differences = []
    for config in rows:
        present = [t for t in targets if groups[config].get(t)]
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                for scorer in scorers:
                    entry = _difference(scorer, a, b, groups[config][a], groups[config][b])
                    differences.append({"config": config, **entry})

    curves = {
        scorer: {
            config: {t: _curve(groups[config][t], scorer) for t in targets if t in groups[config]}
            for config in configs
        }
        for scorer in scorers
    }
    judges = sorted({r.transcript.scores.judge for r in rollouts if r.transcript.scores})
    board = build_board(every)
    spiral = build_spiral(every)
    return {
        "compare_version": COMPARE_VERSION,
        "runs": [_run_entry(run) for run in results],
        "configs": rows,
        "targets": targets,
        "scorers": scorers,
        "rates": [spec.name for spec in rates],
        "table": table,
        "differences": differences,
        "curves": curves,
        "judges": judges,
        "board": board,
        "spiral": spiral,
        "notices": _notices(judges, results, rollouts, scorers, board or spiral),
    }


def _count(statuses) -> dict[str, int]:
    found: dict[str, int] = {}
    for status in statuses:
        found[status] = found.get(status, 0) + 1
    return dict(sorted(found.items()))


def _cost(members: list[RolloutResult]) -> float | None:
    costs = [m.transcript.cost_usd for m in members]
    if not costs or any(c is None for c in costs):
        return None
    return round(sum(costs), 6)  # type: ignore[arg-type]


def _rate(outcomes: list[bool | None]) -> dict[str, Any]:
    judged = [o for o in outcomes if o is not None]
    found = rate(sum(judged), len(judged))
    return {**found.to_dict(), "successes": sum(judged), "no_value": len(outcomes) - len(judged)}


def _statuses(run: RunResults) -> dict[str, int]:
    found = _count(r.status for r in run.rollouts)
    if run.pending:
        found["pending"] = run.pending
    return dict(sorted(found.items()))


def _run_entry(run: RunResults) -> dict[str, Any]:
    return {
        "dir": run.name,
        "kind": run.kind,
        "created_at": run.created_at,
        "seed": run.record.seed,
        "configs": run.configs,
        "targets": run.targets,
        "cells": run.cells,
        "statuses": _statuses(run),
    }


def _notices(
    judges: list[str],
    results: list[RunResults],
    used: list[RolloutResult],
    scorers: list[str],
    board: dict[str, Any] | None = None,
) -> list[str]:
    notices = []
    if not scorers and board:
        notices.append(
            "No rollout is scored by loom-sim yet: the tables by model show the reference "
            "judge's scores the runs were imported with; `loom-sim score RUN_DIR` adds loom-sim's."
        )
    elif not scorers:
        notices.append("No rollout is scored yet: `loom-sim score RUN_DIR` scores them.")
    if any(j.startswith(EMBEDDED_JUDGE) for j in judges):
        notices.append(EMBEDDED_NOTICE)
    elif any(j.startswith("scripted/") for j in judges):
        notices.append(SCRIPTED_NOTICE)
    if len(judges) > 1:
        notices.append(
            f"Rollouts were scored by different judges ({', '.join(judges)}): a difference may "
            "be the judges'."
        )
    cells = sum(run.cells for run in results)
    unfinished = {
        status: count
        for run in results
        for status, count in _statuses(run).items()
        if status != "done"
    }
    waiting = cells - sum(_statuses(run).get("done", 0) for run in results)
    if waiting:
        notices.append(
            f"{waiting} of {cells} rollouts are not done "
            f"({', '.join(sorted(unfinished))}); "
            f"{len(used)} with turns are compared."
        )
    return notices
