"""The report's section on the model under evaluation: its numbers, built from the transcripts.

Per rollout: psychosis-bench's summary of loom-sim's DCS/HES/SIS scores, those scores by phase
and by turn (each in one of four states: a value, *not applicable* before its activation turn,
*failed* when the judge could not give it, or not scored), the clinical markers, the
end-of-conversation dimensions. When the transcript was imported with the source's own scores
(reference scores), the same numbers for the reference — its summary recomputed from its
per-turn scores and checked against the one its file holds — and the agreement between the two
judges per scorer. Turns count from 1 here, as psychosis-bench counts them.

Only data: :mod:`loom_sim.rollout.report.target_tables` words it for both renderers.
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any

import msgspec

from loom_sim.judging.target import DIMENSIONS
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.report.spiral import NAMES as SPIRAL_SCORERS
from loom_sim.rollout.report.spiral import spiral_section
from loom_sim.rollout.scoring.agreement import agreement, spiral_agreement
from loom_sim.rollout.scoring.markers import ASSISTANT_MARKERS, PATIENT_MARKERS
from loom_sim.rollout.scoring.safety import (
    SAFETY_SCORES,
    as_source,
    differences,
    marker_summary,
    records_summary,
)
from loom_sim.store.records import SafetySummary, Score, Transcript, TurnRecord

#: the ones with tables of their own
BUILT_IN = (*SAFETY_SCORES, "dimensions", "markers", *SPIRAL_SCORERS)
AGREEMENT_NOTICE = {
    "embedded": "The judge was the embedded SmolLM2-135M model: expect its agreement with the "
    "reference judge to be near chance. It shows the comparison works, not how good a judge is.",
    "scripted": "The judge was a scripted stand-in drawing random scores: its agreement with the "
    "reference judge is chance by construction.",
}


def is_target(name: str) -> bool:
    return name in SCORERS and SCORERS.get(name).subject == "target"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(float(value), 6) if math.isfinite(value) else None


def cell(score: Score | None) -> dict[str, Any]:
    """One score as the report shows it: its state, and its value or why it has none."""
    if score is None:
        return {"state": "not_scored", "value": None}
    out: dict[str, Any] = {"state": score.state, "value": _num(score.value)}
    if score.error:
        out["error"] = score.error
    if score.not_applicable:
        out["not_applicable"] = score.not_applicable
    return out


def summary_data(summary: SafetySummary) -> dict[str, Any]:
    def tidy(value: Any) -> Any:
        if isinstance(value, list):
            return [tidy(v) for v in value]
        return _num(value) if isinstance(value, float) else value

    return {k: tidy(v) for k, v in msgspec.to_builtins(summary).items()}


def _by_phase(records: list[TurnRecord], phases: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for phase in phases:
        row = {}
        for name in SAFETY_SCORES:
            values = [
                value
                for r in records
                if r.phase == phase
                and name in r.scores
                and (value := r.scores[name].value) is not None
            ]
            row[name] = _num(fmean(values)) if values else None
        out[phase] = row
    return out


def _reference(transcript: Transcript) -> dict[str, Any] | None:
    ref = transcript.reference
    if ref is None:
        return None
    recomputed = records_summary(transcript.turns, reference=True)
    written = ref.summary if isinstance(ref.summary, dict) else None
    found = differences(as_source(recomputed), written) if written is not None else None
    return {
        "source": ref.source,
        "file": ref.file,
        "judge": ref.judge,
        "summary": summary_data(recomputed),
        "written": written,
        "matches": None if found is None else not found,
        "differences": found or [],
    }


def _reference_markers(transcript: Transcript) -> dict[str, Any] | None:
    """The source's clinical markers as first-seen turns (its ``marker_turns``)."""
    markers = transcript.reference.markers if transcript.reference else None
    if not isinstance(markers, dict):
        return None
    turns = markers.get("marker_turns") or {}
    return {
        "patient": {m: turns.get(f"patient_{m}") for m in PATIENT_MARKERS},
        "assistant": {m: turns.get(f"clinician_{m}") for m in ASSISTANT_MARKERS},
        "detection": markers.get("detection_mode", "keyword"),
    }


def _dimensions(records: list[TurnRecord]) -> dict[str, Any] | None:
    def last(source: str) -> tuple[int, Score] | None:
        for record in reversed(records):
            score = getattr(record, source).get("dimensions")
            if score is not None and score.state != "not_applicable":
                return record.turn + 1, score
        return None

    ours, theirs = last("scores"), last("reference")
    if ours is None and theirs is None:
        return None
    out: dict[str, Any] = {"criteria": list(DIMENSIONS)}
    for key, found in (("loom_sim", ours), ("reference", theirs)):
        if found is None:
            out[key] = None
            continue
        turn, score = found
        out[key] = {
            "turn": turn,
            **cell(score),
            "scores": {k: _num(v) for k, v in (score.details.get("scores") or {}).items()},
            "not_applicable": dict(score.details.get("not_applicable") or {}),
        }
    return out


def _agreement(records: list[TurnRecord], names: list[str]) -> dict[str, Any]:
    """Per scorer with reference scores: the two judges compared over the turns both scored."""
    out = {}
    for name in names:
        if name not in SAFETY_SCORES:
            continue
        pairs, reference_only, ours_only = [], 0, 0
        for record in records:
            theirs, ours = record.reference.get(name), record.scores.get(name)
            if theirs is None or ours is None:
                continue
            if theirs.value is not None and ours.value is not None:
                pairs.append((record.turn + 1, theirs.value, ours.value))
            elif theirs.value is not None:
                reference_only += 1
            elif ours.value is not None:
                ours_only += 1
        if pairs or reference_only or ours_only:
            out[name] = agreement(
                name,
                pairs,
                SCORERS.get(name).scale,
                reference_only=reference_only,
                loom_sim_only=ours_only,
            ).data()
    dims = _dimension_pairs(records)
    if dims is not None:
        out["dimensions"] = dims
    return out


def _dimension_pairs(records: list[TurnRecord]) -> dict[str, Any] | None:
    data = _dimensions(records)
    if not data or not data.get("loom_sim") or not data.get("reference"):
        return None
    ours, theirs = data["loom_sim"]["scores"], data["reference"]["scores"]
    pairs = [(k, theirs[k], ours[k]) for k in DIMENSIONS if ours.get(k) and theirs.get(k)]
    return agreement("dimensions", pairs, SCORERS.get("dimensions").scale).data()


def _rollout(transcript: Transcript, names: list[str], phases: list[str]) -> dict[str, Any]:
    records = transcript.turns
    own = transcript.scores.target if transcript.scores else None
    summary = own.safety if own is not None else records_summary(records)
    markers = own.markers if own is not None and own.markers else marker_summary(records)
    shown = [n for n in names if n in SAFETY_SCORES]
    has_reference = any(r.reference for r in records)
    return {
        "rollout": transcript.rollout,
        "model": transcript.models.get("interlocutor", "?"),
        "status": transcript.status,
        "turns": len(records),
        "planned_turns": own.planned_turns if own else None,
        "activation": dict(own.activation) if own else {},
        "scored": any(n in r.scores for r in records for n in names),
        "summary": summary_data(summary),
        "failed": {
            n: sum(1 for r in records if n in r.scores and r.scores[n].state == "failed")
            for n in shown
        },
        "by_phase": _by_phase(records, phases),
        "by_turn": [
            {
                "turn": r.turn + 1,
                "phase": r.phase,
                "scores": {n: cell(r.scores.get(n)) for n in shown},
                "reference": {n: cell(r.reference.get(n)) for n in shown} if has_reference else {},
            }
            for r in records
        ],
        "markers": {
            "patient": dict(markers.patient),
            "assistant": dict(markers.assistant),
            "scored": "markers" in names and any("markers" in r.scores for r in records),
        },
        "reference_markers": _reference_markers(transcript),
        "dimensions": _dimensions(records),
        "reference": _reference(transcript),
        "agreement": _agreement(records, names) if has_reference else {},
        "others": _others(transcript, names),
    }


def _others(transcript: Transcript, names: list[str]) -> dict[str, dict[str, Any]]:
    """A plug-in's scorers of the model under evaluation: their rollout aggregate."""
    summary = transcript.scores.aggregates if transcript.scores else {}
    return {
        name: {"value": _num(summary[name].headline), "n": summary[name].n}
        for name in names
        if name not in BUILT_IN and name in summary
    }


def target_section(
    transcripts: list[Transcript], phases: list[str], judge: str | None
) -> dict[str, Any] | None:
    """The data of the report's first section, or None when no target scorer ran and no
    transcript carries reference scores. ``judge`` is ``embedded``, ``scripted`` or None."""
    found = [
        n for t in transcripts for r in t.turns for n in (*r.scores, *r.reference) if is_target(n)
    ]
    names = [n for n in SCORERS.names() if n in found]
    if not names:
        return None
    rollouts = [_rollout(t, names, phases) for t in transcripts]
    # Spiral-Bench's judge against loom-sim's, over the run (one conversation is few turns)
    spiral_pairs = spiral_agreement(
        [t.turns for t in transcripts], [t.rollout for t in transcripts]
    )
    compared = any(r["agreement"] for r in rollouts) or bool(spiral_pairs)
    return {
        "scorers": names,
        "safety": [n for n in SAFETY_SCORES if n in names],
        "scales": {n: list(SCORERS.get(n).scale) for n in names},
        "rollouts": rollouts,
        "references": any(r["reference"] for r in rollouts),
        "agreement_notice": AGREEMENT_NOTICE.get(judge or "") if compared else None,
        "spiral": spiral_section(transcripts),
        "spiral_agreement": spiral_pairs,
    }
