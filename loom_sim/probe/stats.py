"""The numbers of a probe summary: success rates with Wilson intervals, pairs, regret.

Intervals are Wilson's (:mod:`loom_sim.rates` says why).

Rates are over *judged* runs: a run whose judge gave no verdict is neither a success nor a
failure, so it is counted apart (``unjudged``) instead of silently lowering the rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from loom_sim.probe.records import ProbeRecord
from loom_sim.rates import Z95, wilson

# wilson (and Z95) moved down to loom_sim.rates, which the compare view and the harness share.
__all__ = [
    "Z95",
    "Pair",
    "Rate",
    "empirical_rates",
    "pair_counts",
    "pairs",
    "regret_curve",
    "tally",
    "wilson",
]


@dataclass(frozen=True)
class Rate:
    """Successes among judged runs, and the runs the judge could not decide."""

    successes: int = 0
    judged: int = 0
    unjudged: int = 0

    @property
    def runs(self) -> int:
        return self.judged + self.unjudged

    @property
    def rate(self) -> float | None:
        return self.successes / self.judged if self.judged else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.successes, self.judged)

    def add(self, success: bool | None) -> Rate:
        if success is None:
            return Rate(self.successes, self.judged, self.unjudged + 1)
        return Rate(self.successes + int(success), self.judged + 1, self.unjudged)

    def to_dict(self) -> dict[str, object]:
        interval = self.interval
        return {
            "runs": self.runs,
            "judged": self.judged,
            "successes": self.successes,
            "unjudged": self.unjudged,
            "rate": None if self.rate is None else round(self.rate, 4),
            "ci95": None if interval is None else [round(v, 4) for v in interval],
        }

    def text(self) -> str:
        """``"7/20 · 35% (18–57%)"``, or ``"—"`` with nothing judged; unjudged runs noted."""
        if not self.judged:
            return "—" if not self.unjudged else f"— ({self.unjudged} unjudged)"
        low, high = self.interval or (0.0, 0.0)
        text = f"{self.successes}/{self.judged} · {_pct(self.rate)} ({_pct(low)}–{_pct(high)})"
        return text + (f", {self.unjudged} unjudged" if self.unjudged else "")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def tally(
    records: Iterable[ProbeRecord], key: Callable[[ProbeRecord], str] | None = None
) -> dict[str, Rate]:
    """Rates grouped by ``key`` (all records under ``"all"`` when no key), keys sorted."""
    groups: dict[str, Rate] = {}
    for record in records:
        name = key(record) if key else "all"
        groups[name] = groups.get(name, Rate()).add(record.success)
    return dict(sorted(groups.items()))


def empirical_rates(records: Iterable[ProbeRecord]) -> dict[str, dict[str, float]]:
    """Success rate per (Turn-1 category, strategy) over the judged runs given."""
    cells: dict[str, dict[str, Rate]] = {}
    for record in records:
        arms = cells.setdefault(record.category, {})
        arms[record.strategy] = arms.get(record.strategy, Rate()).add(record.success)
    return {
        category: {s: r.rate for s, r in sorted(arms.items()) if r.rate is not None}
        for category, arms in sorted(cells.items())
    }


def regret_curve(
    choices: Iterable[tuple[str, str]], rates: Mapping[str, Mapping[str, float]]
) -> list[float]:
    """Cumulative expected regret of (category, strategy) choices against ``rates``.

    Each step adds the best known rate for its category minus the chosen strategy's rate
    (pseudo-regret: the luck of the draw does not enter). A choice whose rate is unknown (that
    pair was never judged) adds nothing, and the curve carries its last value.
    """
    total, curve = 0.0, []
    for category, strategy in choices:
        known = rates.get(category, {})
        if strategy in known:
            total += max(known.values()) - known[strategy]
        curve.append(round(total, 6))
    return curve


@dataclass(frozen=True)
class Pair:
    """Run ``run_id`` of two modes: the same prompt and Turn-1 seed."""

    run_id: int
    first: ProbeRecord
    second: ProbeRecord


def pairs(first: Iterable[ProbeRecord], second: Iterable[ProbeRecord]) -> list[Pair]:
    """Runs present in both logs, matched by run index (and checked to share the prompt)."""
    by_run = {r.run_id: r for r in second}
    return [
        Pair(r.run_id, r, by_run[r.run_id])
        for r in first
        if r.run_id in by_run and by_run[r.run_id].prompt_id == r.prompt_id
    ]


def pair_counts(matched: list[Pair]) -> dict[str, int]:
    """How paired runs split: only the first mode contradicted, only the second, both,
    neither, or not comparable (a judge failure on either side)."""
    counts = {"paired": len(matched), "only_first": 0, "only_second": 0, "both": 0}
    counts |= {"neither": 0, "unjudged": 0}
    for pair in matched:
        a, b = pair.first.success, pair.second.success
        if a is None or b is None:
            counts["unjudged"] += 1
        elif a and b:
            counts["both"] += 1
        elif a:
            counts["only_first"] += 1
        elif b:
            counts["only_second"] += 1
        else:
            counts["neither"] += 1
    return counts
