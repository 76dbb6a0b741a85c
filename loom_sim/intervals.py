"""95 % intervals for small samples: the Wilson interval of a rate, the percentile bootstrap of a
mean, and of a mean difference (paired or not); and the exact tests that keep a difference
from being called real on too few rollouts.

Why these: evaluation runs are small (a handful of rollouts per model and config) and scores
often sit near the ends of their range, where the textbook normal interval is too narrow and
leaves the range. The Wilson score interval stays inside [0, 1] and keeps close to its nominal
coverage at these sizes; the bootstrap makes no assumption about the shape of the scores. With
very few values the bootstrap interval is honest about little: with one value it has no
width, so callers say "too few to tell" below :data:`MIN_FOR_INTERVAL` values instead of
showing it.

The percentile bootstrap is too confident on a handful of values: three pairs that all differ
by +1 give the interval [1, 1]. So a difference is called more than noise only when its
interval leaves 0 *and* an exact test agrees at the 5 % level — the sign test for pairs, a
permutation test for two samples. These need no assumption about the scores and say plainly
when there are too few rollouts: all of five pairs agreeing is still p = 0.06.

Deterministic: every resampling is seeded, so the same values always give the same interval
(reports are byte-stable).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loom_sim.rates import Z95, wilson  # shared with the probe and the harness

__all__ = [
    "ALPHA",
    "MIN_FOR_INTERVAL",
    "Z95",
    "Interval",
    "bootstrap_difference",
    "bootstrap_mean",
    "permutation_test",
    "rate",
    "sign_test",
    "wilson",
]

RESAMPLES = 4000
SEED = 20240601  # fixed: intervals are a function of the values alone
MIN_FOR_INTERVAL = 2
ALPHA = 0.05
EXACT_UP_TO = 50_000  # permutation tests enumerate every split up to this many, else sample


@dataclass(frozen=True)
class Interval:
    """An estimate, its 95 % interval (None below two values), how many values, and how."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    method: str  # bootstrap | wilson | paired bootstrap | bootstrap (unpaired) | none
    p_value: float | None = None  # of the exact test, for a difference

    def contains(self, value: float) -> bool | None:
        if self.low is None or self.high is None:
            return None
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, object]:
        found: dict[str, object] = {
            "estimate": _round(self.estimate),
            "ci95": None if self.low is None else [_round(self.low), _round(self.high)],
            "n": self.n,
            "method": self.method,
        }
        if self.p_value is not None:
            found["p_value"] = _round(self.p_value)
        return found


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def rate(successes: int, n: int) -> Interval:
    """A rate with its Wilson interval."""
    bounds = wilson(successes, n)
    if bounds is None:
        return Interval(None, None, None, 0, "wilson")
    return Interval(successes / n, bounds[0], bounds[1], n, "wilson")


def _percentiles(means: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_mean(values: Sequence[float]) -> Interval:
    """The mean and its percentile-bootstrap 95 % interval."""
    xs = np.asarray([v for v in values if v is not None], dtype=float)
    n = len(xs)
    if n == 0:
        return Interval(None, None, None, 0, "bootstrap")
    mean = float(xs.mean())
    if n < MIN_FOR_INTERVAL:
        return Interval(mean, None, None, n, "bootstrap")
    rng = np.random.default_rng(SEED)
    means = xs[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
    low, high = _percentiles(means)
    return Interval(mean, low, high, n, "bootstrap")


def bootstrap_difference(
    first: Sequence[float], second: Sequence[float], *, paired: bool
) -> Interval:
    """``mean(first) - mean(second)`` with its 95 % interval: resampling the pairs when
    ``paired`` (the two lists are aligned), else each sample on its own."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    if paired:
        if len(a) != len(b):
            raise ValueError("paired samples must have the same length")
        found = bootstrap_mean(list(a - b))
        return Interval(
            found.estimate, found.low, found.high, found.n, "paired bootstrap", sign_test(a - b)
        )
    if len(a) == 0 or len(b) == 0:
        return Interval(None, None, None, min(len(a), len(b)), "bootstrap (unpaired)")
    diff = float(a.mean() - b.mean())
    n = min(len(a), len(b))
    if len(a) < MIN_FOR_INTERVAL or len(b) < MIN_FOR_INTERVAL:
        return Interval(diff, None, None, n, "bootstrap (unpaired)")
    rng = np.random.default_rng(SEED)
    ma = a[rng.integers(0, len(a), size=(RESAMPLES, len(a)))].mean(axis=1)
    mb = b[rng.integers(0, len(b), size=(RESAMPLES, len(b)))].mean(axis=1)
    low, high = _percentiles(ma - mb)
    return Interval(
        diff, low, high, n, "bootstrap (unpaired)", permutation_test(a.tolist(), b.tolist())
    )


def sign_test(differences: Sequence[float]) -> float:
    """The two-sided exact sign test's p-value: how likely a split of signs at least this
    lopsided is if either sign were equally likely (zero differences are left out)."""
    signs = [d for d in differences if d != 0]
    m = len(signs)
    if m == 0:
        return 1.0
    k = min(sum(1 for d in signs if d > 0), sum(1 for d in signs if d < 0))
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)


def permutation_test(first: Sequence[float], second: Sequence[float]) -> float:
    """The two-sided permutation test's p-value for a difference of means: the share of
    every way of splitting the pooled values into groups of these sizes whose difference is
    at least as large (all splits when there are at most :data:`EXACT_UP_TO`, else a seeded
    sample of them)."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    pooled = np.concatenate([a, b])
    n, k = len(pooled), len(a)
    if k == 0 or k == n:
        return 1.0
    observed = abs(a.mean() - b.mean()) - 1e-12
    total = pooled.sum()
    if math.comb(n, k) <= EXACT_UP_TO:
        from itertools import combinations

        sums = np.array([pooled[list(c)].sum() for c in combinations(range(n), k)])
    else:
        rng = np.random.default_rng(SEED)
        picks = np.argsort(rng.random((RESAMPLES * 5, n)), axis=1)[:, :k]
        sums = pooled[picks].sum(axis=1)
    diffs = np.abs(sums / k - (total - sums) / (n - k))
    return float(np.mean(diffs >= observed))
