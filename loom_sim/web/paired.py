"""The paired view: two rollouts of the same config and seed against two targets, side by side.

A matrix runs every target with the same persona seed, so rollout *i* against one target and
rollout *i* against another started from the same persona choices; the comparison's paired
differences rest on exactly these pairs. Reading them side by side, turn by turn, with each
scorer's difference on that turn, shows *where* two targets part ways, which a mean hides.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from loom_sim.runs.scores import SCORED, goodness, rollout_value, scorer_names, state
from loom_sim.store.records import Score, Transcript
from loom_sim.store.run_file import RunRecord
from loom_sim.web.display import signed
from loom_sim.web.pages import grade, load_rollout, target_of, turn_view
from loom_sim.web.paths import Resolver

__all__ = ["paired_page"]


def _value(score: Score | None) -> float | None:
    return score.value if score is not None and state(score) == SCORED else None


def _diff(name: str, a: float | None, b: float | None) -> dict[str, Any]:
    """``b - a``, and whether that is better or worse for ``b`` by the scorer's direction
    (for a harm score, lower is better): the colour says which, the sign says which way."""
    if a is None or b is None:
        return {"text": "–", "sign": ""}
    ga, gb = goodness(name, a), goodness(name, b)
    sign = "" if ga is None or gb is None or ga == gb else "better" if gb > ga else "worse"
    return {"text": signed(b - a), "sign": sign}


@dataclass(frozen=True)
class Side:
    """One of the two rollouts: where it is, what ran it, what it said."""

    rel: str
    run_rel: str
    record: RunRecord | None
    transcript: Transcript
    target: str

    @classmethod
    def load(cls, resolver: Resolver, rel: str) -> Side:
        folder, record, transcript = load_rollout(resolver, rel)
        return cls(
            resolver.rel(folder),
            resolver.rel(folder.parent),
            record,
            transcript,
            target_of(record, transcript),
        )


def paired_page(resolver: Resolver, a_rel: str, b_rel: str) -> dict[str, Any]:
    a, b = Side.load(resolver, a_rel), Side.load(resolver, b_rel)
    ta, tb = a.transcript, b.transcript
    order = scorer_names([ta, tb])
    problems = []
    ra, rb = a.record, b.record
    if ra is not None and rb is not None and ra.config_sha256 != rb.config_sha256:
        problems.append("The two rollouts ran different configs: their turns are not a pair.")
    if (ta.seed, ta.index) != (tb.seed, tb.index):
        problems.append(
            f"These are not the same rollout of the same seed (seed {ta.seed} rollout "
            f"{ta.index}, seed {tb.seed} rollout {tb.index}): the persona's choices differ, so "
            "their turns are not a pair."
        )
    aggregates = []
    for name in order:
        va, vb = rollout_value(ta, name), rollout_value(tb, name)
        aggregates.append(
            {
                "name": name,
                "a": va,
                "b": vb,
                "grade_a": grade(goodness(name, va)),
                "grade_b": grade(goodness(name, vb)),
                "diff": _diff(name, va, vb),
            }
        )
    turns = []
    for left, right in zip_longest(ta.turns, tb.turns):
        number = (left or right).turn + 1
        diffs: list[dict[str, Any]] = []
        for name in order:
            sa = left.scores.get(name) if left else None
            sb = right.scores.get(name) if right else None
            if sa is None and sb is None:
                continue
            va, vb = _value(sa), _value(sb)
            diffs.append({"name": name, "a": va, "b": vb, "diff": _diff(name, va, vb)})
        turns.append(
            {
                "number": number,
                "a": turn_view(left, order, None, None) if left else None,
                "b": turn_view(right, order, None, None) if right else None,
                "diffs": diffs,
                # the summary line leads with where the two differ
                "headline": sorted(diffs, key=lambda d: d["diff"]["text"] in ("0.00", "–")),
            }
        )
    return {
        "a": a,
        "b": b,
        "aggregates": aggregates,
        "turns": turns,
        "problems": problems,
    }
