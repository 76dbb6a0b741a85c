"""How far two judges agree on the same items: exact agreement, Cohen's weighted kappa,
Krippendorff's alpha, the confusion matrix and the items they disagree on.

This is how a judge model is calibrated before it is trusted: score transcripts another judge
has scored (psychosis-bench's, imported as reference scores) and compare. Only items both
judges scored are paired; an item one of them could not score (failed, or not applicable) is
counted apart, never paired with a made-up value.

Kappa is linearly weighted, so a 0-vs-2 disagreement on DCS costs twice a 0-vs-1 one; alpha
(the ``krippendorff`` package) is ordinal for scales of three points or more, nominal for a
two-point scale (SIS), interval for continuous values. Both are undefined when the scores do
not vary (every DCS a 2, say): agreement beyond chance cannot be told from chance then, and
the reason is given instead of a number.

Spiral-Bench's judge is compared the same way (:func:`spiral_agreement`): per turn, its chunk
score and each behaviour's strength sum, and the end-of-conversation figures.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from loom_sim.rollout.scoring.spiral import BEHAVIOURS, DEFAULT_SCHEME, FINAL, SCHEMES, key
from loom_sim.store.records import Score, TurnRecord

#: (item, reference score, loom-sim's score): an item is a turn (from 1) or a dimension name.
Pair = tuple[Any, float, float]


@dataclass(frozen=True)
class Agreement:
    scorer: str
    categories: list[float]  # the scale's points (empty for a continuous scale)
    level: str  # nominal | ordinal | interval: how alpha treats the values
    pairs: int  # items both judges scored
    exact: float | None  # share of pairs with the same score
    kappa: float | None  # Cohen's kappa, linearly weighted
    alpha: float | None  # Krippendorff's alpha
    undefined: str | None  # why kappa and alpha have no value, when they have none
    confusion: list[list[int]]  # rows: the reference's score, columns: loom-sim's
    disagreements: list[dict[str, Any]]  # {"item", "reference", "loom_sim"}
    reference_only: int = 0  # items the reference scored and loom-sim did not
    loom_sim_only: int = 0  # and the other way round

    def data(self) -> dict[str, Any]:
        return {
            "scorer": self.scorer,
            "categories": self.categories,
            "level": self.level,
            "pairs": self.pairs,
            "exact": self.exact,
            "kappa": self.kappa,
            "alpha": self.alpha,
            "undefined": self.undefined,
            "confusion": self.confusion,
            "disagreements": self.disagreements,
            "reference_only": self.reference_only,
            "loom_sim_only": self.loom_sim_only,
        }


def categories_of(scale: tuple[float, float]) -> list[float]:
    """The points of an integer scale of at most 11 (0-2, 0-1, 1-10), else none."""
    low, high = scale
    if float(low).is_integer() and float(high).is_integer() and 0 < high - low <= 10:
        return [float(v) for v in range(int(low), int(high) + 1)]
    return []


def agreement(
    scorer: str,
    pairs: Sequence[Pair],
    scale: tuple[float, float],
    *,
    reference_only: int = 0,
    loom_sim_only: int = 0,
) -> Agreement:
    points = categories_of(scale)
    level = "interval" if not points else "nominal" if len(points) == 2 else "ordinal"
    reference = [float(r) for _, r, _ in pairs]
    ours = [float(o) for _, _, o in pairs]
    disagreements = [
        {"item": item, "reference": r, "loom_sim": o} for item, r, o in pairs if r != o
    ]
    exact = (len(pairs) - len(disagreements)) / len(pairs) if pairs else None
    confusion = (
        [[sum(1 for _, r, o in pairs if r == a and o == b) for b in points] for a in points]
        if points
        else []
    )
    undefined = None
    kappa = alpha = None
    if len(pairs) < 2:
        undefined = "fewer than two items scored by both judges"
    elif len(set(reference + ours)) < 2:
        undefined = f"no variation: every score was {reference[0]:g}, so chance explains it all"
    else:
        kappa = weighted_kappa(reference, ours, points) if points else None
        alpha = _alpha(reference, ours, level, points)
        if kappa is None and alpha is None:
            undefined = "no variation beyond chance to measure"
    return Agreement(
        scorer=scorer,
        categories=points,
        level=level,
        pairs=len(pairs),
        exact=exact,
        kappa=kappa,
        alpha=alpha,
        undefined=undefined,
        confusion=confusion,
        disagreements=disagreements,
        reference_only=reference_only,
        loom_sim_only=loom_sim_only,
    )


def weighted_kappa(a: Sequence[float], b: Sequence[float], points: Sequence[float]) -> float | None:
    """Cohen's kappa with linear weights |i - j| / (k - 1) between the scale's points; None
    when chance alone predicts no disagreement (one judge never varies)."""
    index = {p: i for i, p in enumerate(points)}
    k, n = len(points), len(a)
    if k < 2 or n == 0:
        return None
    observed = [[0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        observed[index[x]][index[y]] += 1
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    weight = [[abs(i - j) / (k - 1) for j in range(k)] for i in range(k)]
    seen = sum(weight[i][j] * observed[i][j] for i in range(k) for j in range(k)) / n
    chance = sum(weight[i][j] * rows[i] * cols[j] for i in range(k) for j in range(k)) / (n * n)
    return 1.0 - seen / chance if chance > 0 else None


def _alpha(
    reference: list[float], ours: list[float], level: str, points: list[float]
) -> float | None:
    import krippendorff  # numpy-backed; imported when a report has something to compare

    domain = points or None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a 0/0 is reported as undefined
        try:
            value = krippendorff.alpha(
                reliability_data=[reference, ours],
                level_of_measurement=cast(Literal["nominal", "ordinal", "interval"], level),
                value_domain=domain,
            )
        except ValueError:
            return None
    value = float(value)
    return value if math.isfinite(value) else None


# ─── Spiral-Bench ───────────────────────────────────────────────────────────

SPIRAL, SPIRAL_FINAL = "spiral", "spiral_final"


def _cap(score: Score) -> int:
    scheme = SCHEMES.get(str(score.details.get("scheme")), SCHEMES[DEFAULT_SCHEME])
    return int(scheme.chunk_cap)


def _figure(score: Score, name: str, cap: int) -> float:
    """A behaviour's strength sum in one chunk, capped as Spiral-Bench caps it."""
    figures = {key(str(k)): v for k, v in (score.details.get("figures") or {}).items()}
    return float(min(round(float(figures.get(name, 0.0))), cap))


def spiral_agreement(
    rollouts: Sequence[Sequence[TurnRecord]], labels: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Spiral-Bench's judge (the reference) against loom-sim's, over the turns both judged:
    the per-turn ``spiral`` value (interval), each behaviour's capped strength sum per turn
    (``spiral:<behaviour>``, ordinal from 0 to the chunk cap) and the end-of-conversation
    figures (``spiral_final``: off_rails, safety, social_dexterity, ordinal 0-10). Items are
    turns counted from 1, prefixed by the rollout's label when there are several rollouts.
    Empty when no turn has both judges' ``spiral`` scores."""
    values: list[Pair] = []
    behaviours: dict[str, list[Pair]] = {name: [] for name in BEHAVIOURS}
    finals: list[Pair] = []
    one_sided = [0, 0]
    cap = 0
    for index, records in enumerate(rollouts):
        prefix = f"{labels[index]} " if labels and len(rollouts) > 1 else ""
        last: list[Score | None] = [None, None]
        for record in records:
            theirs, ours = record.reference.get(SPIRAL), record.scores.get(SPIRAL)
            for side, final in enumerate((record.reference, record.scores)):
                found = final.get(SPIRAL_FINAL)
                if found is not None and found.value is not None:
                    last[side] = found
            if theirs is None or ours is None:
                continue
            item: Any = f"{prefix}turn {record.turn + 1}" if prefix else record.turn + 1
            if theirs.value is None or ours.value is None:
                one_sided[0] += theirs.value is not None
                one_sided[1] += ours.value is not None
                continue
            values.append((item, theirs.value, ours.value))
            chunk_cap = _cap(theirs)
            cap = max(cap, chunk_cap)
            for name, pairs in behaviours.items():
                pairs.append(
                    (item, _figure(theirs, name, chunk_cap), _figure(ours, name, chunk_cap))
                )
        if last[0] is not None and last[1] is not None:
            for name in FINAL:
                a, b = last[0].details.get(name), last[1].details.get(name)
                if isinstance(a, int | float) and isinstance(b, int | float):
                    finals.append((f"{prefix}{name}", float(a), float(b)))
    if not values and not finals:
        return {}
    out = {
        SPIRAL: agreement(
            SPIRAL,
            values,
            (0.0, 100.0),
            reference_only=one_sided[0],
            loom_sim_only=one_sided[1],
        ).data()
    }
    if values:
        for name, pairs in behaviours.items():
            out[f"{SPIRAL}:{name}"] = agreement(f"{SPIRAL}:{name}", pairs, (0.0, cap)).data()
    if finals:
        out[SPIRAL_FINAL] = agreement(SPIRAL_FINAL, finals, (0.0, 10.0)).data()
    return out
