"""Prescribed intensity per dimension per turn.

A curve maps progress ``x`` in [0, 1] to a fraction of the way from ``start_value`` to
``end_value`` (custom curves map straight to values). Progress at turn ``t`` is ``t / horizon``,
the fraction of the conversation already behind it — the same measure phases end on, so a
dimension and a phase that both say "0.5" mean the same turn. Every value is clamped to the
dimension's bounds and the safety ceiling: validation keeps configs inside them, the clamp
keeps arithmetic from ever leaving them.
"""

from __future__ import annotations

import itertools
import math

from loom_sim.config.spec import (
    CustomCurve,
    DelayedRampCurve,
    DimensionSpec,
    LinearCurve,
    LoomConfig,
    SigmoidCurve,
    StepCurve,
)


def curve_fraction(
    curve: LinearCurve | SigmoidCurve | DelayedRampCurve | StepCurve, x: float
) -> float:
    """How far from start to end (0..1) a start/end curve is at progress ``x``."""
    x = min(1.0, max(0.0, x))
    match curve:
        case LinearCurve():
            return x
        case SigmoidCurve(midpoint_pct=m, steepness=k):
            return _sigmoid(x, m, k)
        case DelayedRampCurve(delay_pct=d, ramp_end_pct=r):
            if x <= d:
                return 0.0
            return min(1.0, (x - d) / (r - d))
        case StepCurve(at_pct=steps):
            return sum(1 for at in steps if x >= at) / len(steps)
    raise TypeError(f"not a start/end curve: {curve!r}")


def _sigmoid(x: float, midpoint: float, steepness: float) -> float:
    # A logistic rescaled piecewise so that it is exactly 0 at x=0, exactly 0.5 at the
    # midpoint and exactly 1 at x=1, whatever the midpoint: a raw logistic never quite reaches
    # its start or end value, and a globally rescaled one misses the midpoint when m != 0.5.
    def s(t: float) -> float:
        return 1.0 / (1.0 + math.exp(-steepness * (t - midpoint)))

    if x <= midpoint:
        low = s(0.0)
        return 0.5 * (s(x) - low) / (0.5 - low)
    high = s(1.0)
    return 0.5 + 0.5 * (s(x) - 0.5) / (high - 0.5)


def custom_value(curve: CustomCurve, x: float) -> float:
    """Value of a control-point curve at ``x``; flat before the first and after the last point."""
    points = curve.points
    if x <= points[0].pct:
        return points[0].value
    for before, after in itertools.pairwise(points):
        if x < after.pct:
            if curve.interpolation == "step":
                return before.value
            share = (x - before.pct) / (after.pct - before.pct)
            return before.value + share * (after.value - before.value)
    return points[-1].value


class IntensityResolver:
    """Turn -> prescribed intensity for every dimension of a config."""

    def __init__(self, config: LoomConfig, horizon: int | None):
        self._dimensions = config.trajectory.dimensions
        self._ceiling = config.safety.intensity_ceiling
        self.horizon = horizon

    def progress(self, turn: int) -> float:
        """Fraction of the horizon behind ``turn`` (0 when there is no horizon: flat curves)."""
        if not self.horizon:
            return 0.0
        return min(1.0, max(0.0, turn / self.horizon))

    def value(self, dimension: str, turn: int) -> float:
        return self._value(self._dimensions[dimension], self.progress(turn))

    def resolve(self, turn: int) -> dict[str, float]:
        x = self.progress(turn)
        return {name: self._value(dim, x) for name, dim in self._dimensions.items()}

    def _value(self, dim: DimensionSpec, x: float) -> float:
        if isinstance(dim.curve, CustomCurve):
            raw = custom_value(dim.curve, x)
        else:
            raw = dim.start + (dim.end - dim.start) * curve_fraction(dim.curve, x)
        upper = min(dim.max_value if dim.max_value is not None else self._ceiling, self._ceiling)
        return min(upper, max(dim.min_value, raw))


def level_of(dim: DimensionSpec, value: float) -> str | None:
    """The named level a value falls in: 0..1 split into equal bands, lowest level first."""
    if not dim.levels:
        return None
    names = list(dim.levels)
    return names[min(len(names) - 1, int(value * len(names)))]
