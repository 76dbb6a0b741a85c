"""What the detector model is asked, and what of its answer is believed.

Every ``every`` messages the detector reads the last ``window`` messages and, if the cheap
signals say some pair opposes (:mod:`~loom_sim.debate.opposition`), asks its model — at low
temperature — for the substantive disagreements in it: pair, claim, confidence, as JSON
checked against :data:`DETECTION_SCHEMA`. :func:`read_detections` accepts an answer only if
every pair names two different personas who spoke in the window (by id, or by name, which
models often prefer) with one claim (one sentence: it becomes a crux room's question) and a
confidence in [0, 1]; otherwise the detector is asked
again with the reasons.
"""

from __future__ import annotations

import copy
from typing import Any

from loom_sim.debate.checks import sentences
from loom_sim.debate.messages import Disagreement, PairSignal

DETECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "disagreements": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "pair": {"type": "array", "items": {"type": "string"}},
                    "claim": {"type": "string"},
                    "confidence": {"type": "number"},
                },
                "required": ["pair", "claim", "confidence"],
            },
        }
    },
    "required": ["disagreements"],
}


def detection_schema(speakers: list[str]) -> dict[str, Any]:
    """:data:`DETECTION_SCHEMA` for one window: a pair is two of the ids who spoke in it. A
    local model's grammar is built from the schema, so the tighter it is the fewer of a small
    model's answers are wasted on names nobody has."""
    schema = copy.deepcopy(DETECTION_SCHEMA)
    item = schema["properties"]["disagreements"]["items"]["properties"]
    item["pair"] = {
        "type": "array",
        "items": {"type": "string", "enum": sorted(speakers)},
        "minItems": 2,
        "maxItems": 2,
    }
    item["confidence"] = {"type": "number", "minimum": 0, "maximum": 1}
    return schema


def without_last(data: Any) -> Any:
    """The answer without its last disagreement: what a reply cut off inside it still says."""
    if isinstance(data, dict) and isinstance(data.get("disagreements"), list):
        return {**data, "disagreements": data["disagreements"][:-1]}
    return data


def read_detections(
    data: Any, speakers: dict[str, str], spoke: set[str]
) -> list[tuple[list[str], str, float]]:
    """The (pair, claim, confidence) triples in the detector's answer, pairs as sorted ids.

    ``speakers`` maps each persona id to its name; ``spoke`` is who spoke in the window.
    Raises ``ValueError`` with every reason when the answer cannot be used."""
    if not isinstance(data, dict) or not isinstance(data.get("disagreements"), list):
        raise ValueError('answer {"disagreements": [...]}, a list (empty if there are none)')
    by_name = {name.lower(): pid for pid, name in speakers.items()}
    by_name.update({pid.lower(): pid for pid in speakers})
    found: dict[tuple[str, str], tuple[list[str], str, float]] = {}
    reasons: list[str] = []
    for n, item in enumerate(data["disagreements"]):
        where = f"disagreement {n + 1}"
        if not isinstance(item, dict):
            reasons.append(f"{where} is not an object")
            continue
        pair = item.get("pair")
        claim = item.get("claim")
        confidence = item.get("confidence")
        if not isinstance(pair, list) or len(pair) != 2:
            reasons.append(f"{where}: pair must list two persona ids")
            continue
        ids = [by_name.get(str(p).strip().lstrip("@").lower()) for p in pair]
        if None in ids:
            bad = [str(p) for p, i in zip(pair, ids, strict=True) if i is None]
            reasons.append(
                f"{where}: {', '.join(bad)} is not a persona here ({', '.join(speakers)})"
            )
            continue
        a, b = sorted(i for i in ids if i is not None)
        if a == b:
            reasons.append(f"{where}: a pair needs two different personas")
            continue
        if not {a, b} <= spoke:
            reasons.append(f"{where}: {a} and {b} must both have spoken in the window")
            continue
        if not isinstance(claim, str) or not claim.strip():
            reasons.append(f"{where}: claim must say what they disagree about")
            continue
        if len(sentences(claim)) > 1:
            reasons.append(
                f"{where}: claim has {len(sentences(claim))} sentences; a crux room argues one "
                "claim, in one sentence"
            )
            continue
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            reasons.append(f"{where}: confidence must be a number from 0 to 1")
            continue
        if not 0.0 <= confidence <= 1.0:
            reasons.append(f"{where}: confidence {confidence} is not between 0 and 1")
            continue
        key = (a, b)
        if key not in found or confidence > found[key][2]:
            found[key] = ([a, b], " ".join(claim.split()), float(confidence))
    if reasons:
        raise ValueError("; ".join(reasons))
    return list(found.values())


def corroborate(
    triples: list[tuple[list[str], str, float]],
    best: dict[tuple[str, str], PairSignal],
    threshold: float,
) -> list[Disagreement]:
    out = []
    for pair, claim, confidence in triples:
        signal = best.get((pair[0], pair[1]))
        opposition = signal.opposition if signal is not None else 0.0
        learned = signal is not None and signal.counts
        out.append(
            Disagreement(
                pair=pair,
                claim=claim,
                confidence=confidence,
                opposition=opposition,
                corroborated=opposition >= threshold or learned,
            )
        )
    return out


# ─── the crux room's exit check ─────────────────────────────────────────────

EXIT_WAYS = ("both_named", "changed_mind", "irreducible")

EXIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "surfaced": {"type": "boolean"},
        "how": {"type": "string", "enum": [*EXIT_WAYS, ""]},
        "reason": {"type": "string"},
    },
    "required": ["surfaced", "how", "reason"],
}


def read_exit(data: Any) -> tuple[bool, str, str]:
    """(surfaced, how, reason) from the exit check's answer; ``ValueError`` if unusable."""
    if not isinstance(data, dict) or not isinstance(data.get("surfaced"), bool):
        raise ValueError('answer {"surfaced": true or false, "how": ..., "reason": ...}')
    how = str(data.get("how") or "")
    if data["surfaced"] and how not in EXIT_WAYS:
        raise ValueError(f"a surfaced crux needs how: one of {', '.join(EXIT_WAYS)}")
    return (
        data["surfaced"],
        how if data["surfaced"] else "",
        " ".join(str(data.get("reason", "")).split()),
    )
