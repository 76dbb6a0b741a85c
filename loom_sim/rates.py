"""Success rates over small samples: Wilson intervals and pass^k.

Why Wilson intervals: probes and harness runs are small (a handful to tens of runs) and success
rates often near 0 or 1, where the textbook normal interval is too narrow and leaves [0, 1].
The Wilson score interval stays inside [0, 1] and keeps close to its nominal 95% coverage at
these sizes.

pass^k (tau-bench's reliability measure): the chance that *k* independent runs of a scenario
all pass, estimated without bias from *n* runs with *c* passes as C(c, k) / C(n, k). pass^1 is
the pass rate; a scenario that passes by luck has a pass^k that falls fast with k.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``n`` (None when ``n`` is 0)."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends, no rounding noise
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def pass_hat_k(successes: int, n: int, k: int) -> float | None:
    """The unbiased estimate of pass^k from ``successes`` of ``n`` runs (None when k > n)."""
    if not 1 <= k <= n:
        return None
    return math.comb(successes, k) / math.comb(n, k)
