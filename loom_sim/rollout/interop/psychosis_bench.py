"""psychosis-bench-2.0 transcripts: the simulated patient's and the assistant's messages, and
what psychosis-bench's judge made of them.

Its result files hold ``conversation``: entries with ``turn``, ``speaker`` (``patient`` or
``assistant``) and ``content``. Real files are sometimes unfinished (``status: in_progress``)
or hold an API error as the assistant's content; the loader keeps every complete exchange and
reports the rest instead of failing.

``turn_scores`` hold the source judge's DCS, HES and SIS per turn (turns from 1), with -1 for
"no score": before the score's activation turn that means *not applicable*, after it a reply
the judge could not score. :func:`reference_scores` keeps that distinction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loom_sim.errors import LoomError
from loom_sim.rollout.scoring.safety import SAFETY_SCORES, activation_turn
from loom_sim.store.records import Score

API_ERROR = "[API ERROR"
SOURCE = "psychosis-bench-2.0"
#: psychosis-bench's activation shares (its Scorer's defaults), for reading its -1 scores.
SOURCE_ACTIVATION = {"dcs": 0.2, "hes": 0.4, "sis": 0.4}


@dataclass(frozen=True)
class BenchTurn:
    """One complete exchange, with what the source prescribed for it."""

    patient: str
    assistant: str
    phase: str | None
    intensity: dict[str, float]
    patient_tokens: tuple[int, int]  # input, output
    assistant_tokens: tuple[int, int]
    number: int = 0  # the source's turn number (from 1)


@dataclass
class BenchTranscript:
    path: Path
    model: str
    profile: str
    schedule: str
    planned_turns: int | None
    status: str
    exchanges: list[tuple[str, str]]  # (patient, assistant) per complete turn
    problems: list[str] = field(default_factory=list)
    turns: list[BenchTurn] = field(default_factory=list)
    patient_model: str = "?"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def is_bench_transcript(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("conversation"), list)
        and "patient_profile_id" in data
    )


def load_transcript(path: Path) -> BenchTranscript:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise LoomError(f"{path}: not readable as JSON ({err})") from None
    if not is_bench_transcript(data):
        raise LoomError(
            f"{path}: not a psychosis-bench result file (no conversation/patient_profile_id)"
        )
    by_turn: dict[int, dict[str, str]] = {}
    entries: dict[tuple[int, str], dict[str, Any]] = {}
    problems: list[str] = []
    errored: set[int] = set()
    for entry in data["conversation"]:
        speaker, content = entry.get("speaker"), entry.get("content") or ""
        turn = entry.get("turn")
        if speaker not in ("patient", "assistant") or not isinstance(turn, int):
            problems.append(f"entry {entry!r:.60} has no usable turn/speaker")
            continue
        if speaker == "assistant" and content.startswith(API_ERROR):
            problems.append(f"turn {turn}: the assistant's reply is an API error")
            errored.add(turn)
            continue
        by_turn.setdefault(turn, {})[speaker] = content
        entries[(turn, speaker)] = entry
    exchanges = []
    turns: list[BenchTurn] = []
    patient_model = "?"
    for turn in sorted(by_turn):
        pair = by_turn[turn]
        if "patient" in pair and "assistant" in pair:
            exchanges.append((pair["patient"], pair["assistant"]))
            patient, assistant = entries[(turn, "patient")], entries[(turn, "assistant")]
            patient_model = (patient.get("metadata") or {}).get("model", patient_model)
            turns.append(
                BenchTurn(
                    patient=pair["patient"],
                    assistant=pair["assistant"],
                    phase=patient.get("phase_name"),
                    intensity={k: float(v) for k, v in (patient.get("intensity") or {}).items()},
                    patient_tokens=_tokens(patient),
                    assistant_tokens=_tokens(assistant),
                    number=turn,
                )
            )
        elif turn not in errored:
            problems.append(
                f"turn {turn}: no {'assistant reply' if 'patient' in pair else 'patient message'}"
            )
    return BenchTranscript(
        path=path,
        model=str(data.get("assistant_model", "?")),
        profile=str(data.get("patient_profile_id", "?")),
        schedule=str(data.get("intensity_schedule", "?")),
        planned_turns=data.get("num_turns"),
        status=str(data.get("status") or "complete"),
        exchanges=exchanges,
        problems=problems,
        raw=data,
        turns=turns,
        patient_model=str(patient_model),
    )


def _tokens(entry: dict[str, Any]) -> tuple[int, int]:
    meta = entry.get("metadata") or {}
    return int(meta.get("input_tokens") or 0), int(meta.get("output_tokens") or 0)


def reference_scores(transcript: BenchTranscript) -> dict[int, dict[str, Score]]:
    """The source judge's DCS, HES and SIS per source turn (from 1), as loom-sim scores:
    a value, *not applicable* (a -1 before the score's activation turn), or a failure (a -1
    after it, or an error): never a 0 for a score that was not given."""
    planned = transcript.planned_turns or len(transcript.turns)
    found: dict[int, dict[str, Score]] = {}
    for entry in transcript.raw.get("turn_scores") or []:
        number, scores = entry.get("turn"), entry.get("scores")
        if not isinstance(number, int) or not isinstance(scores, dict):
            continue
        found[number] = {
            name: _reference(
                scores[name], number, activation_turn(SOURCE_ACTIVATION[name], planned)
            )
            for name in SAFETY_SCORES
            if isinstance(scores.get(name), dict)
        }
    return found


def _reference(raw: dict[str, Any], number: int, first: int) -> Score:
    value, explanation = raw.get("score"), str(raw.get("explanation") or "")
    details = {"explanation": explanation} if explanation else {}
    if raw.get("error"):
        return Score(None, "reference", details, error=f"the source judge failed: {raw['error']}")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return Score(float(value), "reference", details)
    if number < first:
        return Score(
            None, "reference", details, not_applicable=explanation or f"applies from turn {first}"
        )
    return Score(
        None,
        "reference",
        details,
        error=f"the source judge's reply held no score: {explanation[:80]!r}",
    )
