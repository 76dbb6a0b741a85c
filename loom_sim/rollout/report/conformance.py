"""How a rollout followed loom-sim's own rules, turn by turn: the report's "Following the
plan" section.

- **Instructions in force**: which system prompt the persona held at each turn (the full
  injection it came from, by turn and hash) and which notes rode with the message. Fidelity
  is judged against exactly these (``scoring/scorers/fidelity.py``), and a MUST DO from another
  phase than the turn's would show here as *stale*.
- **Capitulation**: turns whose drafts the guard rejected for a forbidden phrase of giving in,
  and turns whose sent message still says one (flagged).
- **Revelations**: when each was offered, when the persona made it (with the evidence: the
  variant, the sentence, how close), and whether the prompt in force or a monitor's redirect
  offered it again afterwards (neither should).
- **Loops after a redirect**: turns whose message was checked after a stagnation redirect and
  still continued the loop: how often the monitor escalated, and whether the message went
  out anyway (flagged "sent despite redirect").
- **History cut**: turns where earlier history was left out to fit the context budget.

Everything here is read from the records (and the config in ``run.json``): no model, no judge.
"""

from __future__ import annotations

from typing import Any

from loom_sim.rollout.monitors import validity
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.signals.learned import UNCERTAIN
from loom_sim.store.records import TurnRecord
from loom_sim.store.turn_parts import LOOP_CHECK

NOTE_KINDS = (("reminder", "reminder"), ("emergency", "emergency"), ("vary", "re-prompt"))


def _notes(record: TurnRecord) -> list[str]:
    return [label for attr, label in NOTE_KINDS if getattr(record, attr)]


def _offered(records: list[TurnRecord], index: int) -> list[str]:
    """Topics the prompt in force at ``records[index]`` offers (its injecting turn's)."""
    ref = records[index].scaffolding
    since = ref.since if ref is not None else None
    source = next((r for r in records[: index + 1] if r.turn == since), None)
    return [item.partition(":")[0] for item in source.revelations] if source else []


def instructions(records: list[TurnRecord]) -> dict[str, Any]:
    by_turn = {r.turn: r for r in records}
    rows: list[dict[str, Any]] = []
    for record in records:
        ref = record.scaffolding
        fidelity = record.scores.get("fidelity")
        judged = (fidelity.details.get("instructions") or {}) if fidelity else {}
        source = by_turn.get(ref.since) if ref is not None else None
        rows.append(
            {
                "turn": record.turn,
                "phase": record.phase,
                "injection": record.injection,
                "since": ref.since if ref is not None else None,
                "hash": ref.hash if ref is not None else None,
                "phase_in_force": source.phase if source is not None else None,
                "notes": _notes(record),
                "fidelity": fidelity.value if fidelity is not None else None,
                "fidelity_judged_since": judged.get("since"),
                "fidelity_judged_hash": judged.get("hash"),
            }
        )
    recorded = [r for r in rows if r["since"] is not None]
    return {
        "recorded": len(recorded) == len(rows),
        "injected_at": sorted({r["since"] for r in recorded}),
        "stale_must_do": [
            r["turn"] for r in recorded if r["phase_in_force"] not in (None, r["phase"])
        ],
        "oldest_prompt": max((r["turn"] - r["since"] for r in recorded), default=None),
        "turns": rows,
    }


def capitulation(records: list[TurnRecord], phrases: list[str]) -> list[dict[str, Any]]:
    check = CapitulationCheck(phrases)
    found = []
    for record in records:
        rejected = [
            e.pattern.partition(":")[2]
            for e in record.monitor_events
            if e.monitor == "capitulation" and e.action != "accepted_after_retries"
        ]
        sent = check.found(record.persona)
        if rejected or sent:
            found.append(
                {
                    "turn": record.turn,
                    "rejected": list(dict.fromkeys(rejected)),
                    "drafts_rejected": sum(
                        1
                        for draft in record.rejected
                        if any(e.monitor == "capitulation" for e in draft.events)
                    ),
                    "sent": sent,
                    "persona": record.persona,
                }
            )
    return found


def judged_capitulation(records: list[TurnRecord]) -> list[dict[str, Any]]:
    """The turns where the judge's reading of capitulation (the ``capitulation_judged``
    scorer, when a config turns it on) says the persona gave in, or differs from the words'
    check: those are the ones to read."""
    found = []
    for record in records:
        score = record.scores.get("capitulation_judged")
        if score is None or score.value is None:
            continue
        details = score.details or {}
        if score.value == 0.0 or details.get("agrees_with_words") is False:
            found.append(
                {
                    "turn": record.turn,
                    "gave_in": score.value == 0.0,
                    "quote": details.get("quote"),
                    "words": details.get("words"),
                }
            )
    return found


def revelations(records: list[TurnRecord]) -> dict[str, dict[str, Any]]:
    topics: dict[str, dict[str, Any]] = {}
    for index, record in enumerate(records):
        for topic in _offered(records, index) if record.scaffolding is not None else []:
            entry = topics.setdefault(topic, _topic())
            if entry["offered_from"] is None:
                entry["offered_from"] = record.turn
            if entry["revealed_at"] is not None and record.turn > entry["revealed_at"]:
                entry["offered_after_revealed"].append(record.turn)
        for topic in record.offered_by_redirect:
            entry = topics.setdefault(topic, _topic())
            if entry["offered_from"] is None:
                entry["offered_from"] = record.turn
            if entry["revealed_at"] is not None and record.turn > entry["revealed_at"]:
                if record.turn not in entry["offered_after_revealed"]:
                    entry["offered_after_revealed"].append(record.turn)
                entry["redirect_after_revealed"].append(record.turn)
        for topic in record.revealed:
            entry = topics.setdefault(topic, _topic())
            if entry["revealed_at"] is None:
                entry["revealed_at"] = record.turn
                evidence = next((e for e in record.revelation_evidence if e.topic == topic), None)
                if evidence is not None:
                    entry["evidence"] = {
                        "variant": evidence.variant,
                        "similarity": evidence.similarity,
                        "threshold": evidence.threshold,
                        "sentence": evidence.sentence,
                        "method": evidence.method,
                    }
    return topics


def _topic() -> dict[str, Any]:
    return {
        "offered_from": None,
        "revealed_at": None,
        "offered_after_revealed": [],
        "redirect_after_revealed": [],
        "evidence": None,
    }


def loops_after_redirect(records: list[TurnRecord]) -> list[dict[str, Any]]:
    """Turns whose message still continued a loop after a redirect: the escalations, the
    similarity of the last check, and whether it was sent anyway."""
    found = []
    for record in records:
        checks = [e for e in record.monitor_events if e.monitor == LOOP_CHECK]
        if checks or record.sent_despite_redirect:
            last = checks[-1].values if checks else {}
            value, threshold = last.get("value"), last.get("threshold")
            learned = "learned" in last  # the learned check's probability decided
            found.append(
                {
                    "turn": record.turn,
                    "escalations": len(checks),
                    "similarity": value,
                    "threshold": threshold,
                    "measure": "probability" if learned else "similarity",
                    # a verdict this close to its threshold could have gone the other way
                    "uncertain": bool(
                        learned
                        and value is not None
                        and threshold is not None
                        and abs(value - threshold) < UNCERTAIN
                    ),
                    "sent_despite_redirect": record.sent_despite_redirect,
                }
            )
    return found


def history_cuts(records: list[TurnRecord]) -> list[dict[str, Any]]:
    return [
        {"turn": r.turn, **{role: n for role, n in sorted(r.cut_turns.items()) if n}}
        for r in records
        if any(r.cut_turns.values())
    ]


def rollout_conformance(records: list[TurnRecord], phrases: list[str]) -> dict[str, Any]:
    return {
        "instructions": instructions(records),
        "capitulation": capitulation(records, phrases),
        "capitulation_judged": judged_capitulation(records),
        "revelations": revelations(records),
        "loops_after_redirect": loops_after_redirect(records),
        "history_cuts": history_cuts(records),
        # the measured error of the detectors whose verdicts these are
        "detectors": {
            name: validity.figures(name)
            for name in ("capitulation", "loop_after_redirect", "revelation")
        },
    }
