"""What the built-in scorers share: reading judge answers into 0..1 values, and the rule for
scorers that mix a deterministic measure with the judge's opinion.

A judge answer that could not be had never becomes a number: a judge-only scorer gets
``value=None`` and the error; a mixed scorer falls back to its deterministic part and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from loom_sim.judging.rubrics import likert
from loom_sim.messages import Judgement
from loom_sim.store.records import Score


def mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def judge_failed(judgement: Judgement | None) -> str | None:
    if judgement is None:
        return "no judgement"
    return None if judgement.ok else (judgement.error or "the judge gave no usable answer")


def mixed(
    deterministic: float | None, judgement: Judgement | None, key: str, measures: dict[str, Any]
) -> Score:
    """The mean of a deterministic measure and the judge's 1-5 answer ``key``, either alone
    when the other is missing; ``source`` says which it was."""
    error = judge_failed(judgement)
    judged = None if error or judgement is None else likert(judgement.parsed.get(key))
    details = {**measures, "deterministic": deterministic, "judge": judged}
    if error:
        details["judge_error"] = error
    value = mean([deterministic, judged])
    source = (
        "mixed"
        if judged is not None and deterministic is not None
        else ("judge" if judged is not None else "deterministic")
    )
    return Score(
        value, source, details, None if value is not None else (error or "nothing to measure")
    )
