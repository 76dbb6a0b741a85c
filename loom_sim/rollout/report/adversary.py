"""The adversary part of a report: which tactics were used, and which caught the persona.

A reader of an adversary run wants to know more than the scores: what the adversary tried,
on which turns, and whether it worked. Each move is joined to its verdict (reported on a later
turn, once the persona had answered), so a tactic's success rate is read off one table.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from loom_sim.store.records import Transcript


def moves(transcript: Transcript) -> list[dict[str, Any]]:
    """Every adversary move of a rollout, oldest first, with the verdict on it (if any)."""
    verdicts = {
        (r.probe_outcome.adversary, r.probe_outcome.turn): r.probe_outcome
        for r in transcript.turns
        if r.probe_outcome is not None
    }
    out = []
    for record in transcript.turns:
        move = record.adversary
        if move is None:
            continue
        verdict = verdicts.get((move.adversary, record.turn))
        out.append(
            {
                "turn": record.turn,
                "adversary": move.adversary,
                "tactic": move.tactic,
                "policy": move.policy,
                "category": move.category,
                "rationale": move.rationale,
                "material": dict(move.material),
                "composed": move.composed,
                "formality": move.formality,
                "message": record.interlocutor,
                "answer": next(
                    (r.persona for r in transcript.turns if r.turn == record.turn + 1), None
                ),
                "caught": verdict.caught if verdict else None,
                "recovery": verdict.recovery if verdict else None,
                "judged": verdict is not None and verdict.caught is not None,
                "evidence": verdict.evidence if verdict else "",
                "judge_error": verdict.error if verdict else None,
            }
        )
    return out


def adversary_section(run: dict[str, Any], transcripts: list[Transcript]) -> dict[str, Any] | None:
    """Tactic counts and catch rates over the run; None for a run without an adversary."""
    configs = run.get("adversaries") or {}
    per_rollout = {t.rollout: moves(t) for t in transcripts}
    if not configs and not any(per_rollout.values()):
        return None
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for found in per_rollout.values():
        for move in found:
            row = table.setdefault(
                (move["adversary"], move["tactic"]),
                {"adversary": move["adversary"], "tactic": move["tactic"], "used": 0,
                 "templated": 0, "judged": 0, "caught": 0},
            )  # fmt: skip
            row["used"] += 1
            row["templated"] += move["composed"] == "template"
            row["judged"] += move["judged"]
            row["caught"] += move["caught"] is True
            if move["recovery"] is not None:
                row.setdefault("recoveries", []).append(move["recovery"])
    for row in table.values():
        row["caught_rate"] = round(row["caught"] / row["judged"], 4) if row["judged"] else None
        # the trap's scoring focus: how well the persona recovered, as its spec says it does
        recoveries = row.pop("recoveries", [])
        row["recovery"] = round(fmean(recoveries), 4) if recoveries else None
        row["recovery_n"] = len(recoveries)
    return {
        "adversaries": {
            kind: {
                "version": data.get("version"),
                "policy": data.get("policy"),
                "compose": data.get("compose"),
                "judge_outcomes": data.get("judge_outcomes") or data.get("policy") == "bandit",
            }
            for kind, data in configs.items()
        },
        "model": (run.get("models") or {}).get("adversary"),
        "tactics": sorted(table.values(), key=lambda r: (r["adversary"], r["tactic"])),
        "moves": per_rollout,
    }
