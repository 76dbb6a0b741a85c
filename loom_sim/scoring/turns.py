"""Turning judge answers and deterministic measures into one :class:`Score` per scorer.

Each scorer's value is 0..1, higher is better. A judge answer that could not be had never
becomes a number: a judge-only scorer gets ``value=None`` and the error; a mixed scorer falls
back to its deterministic part and says so in ``details``.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from loom_sim.judging.rubrics import likert, unit
from loom_sim.messages import Judgement
from loom_sim.scoring.measures import distinct_n, ending_variety, mtld, opening_variety
from loom_sim.signals.analysis import TurnSignals
from loom_sim.store.records import Score, TurnRecord

MTLD_GOOD = 80.0  # MTLD of varied conversational prose; counts as full marks


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def _judge_failed(judgement: Judgement | None) -> str | None:
    if judgement is None:
        return "no judgement"
    return None if judgement.ok else (judgement.error or "the judge gave no usable answer")


def persona_adherence(judgement: Judgement | None) -> Score:
    error = _judge_failed(judgement)
    if error:
        return Score(None, "judge", error=error)
    answer = judgement.parsed
    value = likert(answer.get("persona_adherence"))
    details = {"judge": answer.get("persona_adherence"), "reason": answer.get("reason", "")}
    return Score(value, "judge", details, None if value is not None else "no 1-5 score given")


def trajectory(judgement: Judgement | None, record: TurnRecord) -> Score:
    prescribed = dict(record.intensities)
    error = _judge_failed(judgement)
    if error:
        return Score(None, "judge", {"prescribed": prescribed}, error=error)
    raw = judgement.parsed.get("expressed") or {}
    expressed = {dim: unit(raw.get(dim)) for dim in prescribed}
    gap = {
        dim: (expressed[dim] - prescribed[dim]) if expressed[dim] is not None else None
        for dim in prescribed
    }
    misses = [abs(g) for g in gap.values() if g is not None]
    value = 1.0 - fmean(misses) if misses else None
    details: dict[str, Any] = {"expressed": expressed, "prescribed": prescribed, "gap": gap}
    return Score(value, "judge", details, None if value is not None else "no expressed values")


def naturalness(judgement: Judgement | None, window: Sequence[TurnRecord]) -> Score:
    texts = [r.persona for r in window]
    measures: dict[str, Any] = {
        "distinct_1": distinct_n(texts, 1),
        "distinct_2": distinct_n(texts, 2),
        "mtld": mtld(texts),
        "opening_variety": opening_variety(texts),
        "ending_variety": ending_variety(texts),
        "formulaic_events": sum(
            1 for r in window for e in r.monitor_events if e.monitor == "repetition"
        ),
    }
    lexical = measures["mtld"]
    deterministic = _mean(
        [
            measures["distinct_2"],
            min(1.0, lexical / MTLD_GOOD) if lexical is not None else None,
            measures["opening_variety"],
            measures["ending_variety"],
        ]
    )
    return _mixed(deterministic, judgement, "naturalness", measures)


def stagnation(judgement: Judgement | None, signals: TurnSignals) -> Score:
    measures: dict[str, Any] = {
        "loop_similarity": signals.loop_similarity,
        "convergence": signals.convergence,
        "lexical_novelty": signals.lexical_novelty,
        "semantic_novelty": signals.semantic_novelty,
        "questions": signals.questions,
        "redirects": signals.redirects,
    }
    deterministic = _mean(
        [
            1 - signals.loop_similarity if signals.loop_similarity is not None else None,
            1 - signals.convergence if signals.convergence is not None else None,
            signals.lexical_novelty,
        ]
    )
    return _mixed(deterministic, judgement, "initiative", measures)


def consistency(judgement: Judgement | None, qa: float | None, qa_details: dict[str, Any]) -> Score:
    error = _judge_failed(judgement)
    parts: dict[str, Any] = {"prompt_to_line": None, "line_to_line": None, "qa": qa, **qa_details}
    if not error:
        parts["prompt_to_line"] = likert(judgement.parsed.get("prompt_to_line"))
        parts["line_to_line"] = likert(judgement.parsed.get("line_to_line"))
    value = _mean([parts["prompt_to_line"], parts["line_to_line"], qa])
    if value is None:
        return Score(None, "judge", parts, error=error or "no consistency measure available")
    if error:
        parts["judge_error"] = error
    return Score(value, "judge", parts)


def fidelity(judgement: Judgement | None) -> Score:
    error = _judge_failed(judgement)
    if error:
        return Score(None, "judge", error=error)
    answer = judgement.parsed
    value = likert(answer.get("followed"))
    details = {
        "judge": answer.get("followed"),
        "violated": list(answer.get("violated") or []),
        "reason": answer.get("reason", ""),
    }
    return Score(value, "judge", details, None if value is not None else "no 1-5 score given")


def _mixed(
    deterministic: float | None, judgement: Judgement | None, key: str, measures: dict[str, Any]
) -> Score:
    error = _judge_failed(judgement)
    judged = None if error else likert(judgement.parsed.get(key))
    details = {**measures, "deterministic": deterministic, "judge": judged}
    if error:
        details["judge_error"] = error
    value = _mean([deterministic, judged])
    source = (
        "mixed"
        if judged is not None and deterministic is not None
        else ("judge" if judged is not None else "deterministic")
    )
    return Score(
        value, source, details, None if value is not None else (error or "nothing to measure")
    )
