"""The scorecard: six weighted components and a pass gate, from what the session left.

Each component is a value in 0..1 with the facts it was computed from, so a reader can check
it; the weights and the gate are the scenario's (by default 35/20/15/15/10/5, and
goal progress ≥ 0.7, at least one required ability used, no fatal adapter error).

* **goal_progress** — the evaluator's last reading of the success criteria: measured ones
  counted from files and events, judged ones by the evaluator model (once met, met).
* **artifact_quality_proxy** — the mean measured quality of the images the target produced
  (exposure, contrast, sharpness; :mod:`loom_sim.imagery`), read from the files, never from
  the target's or a model's description of them; 0 when it produced none.
* **ability_usage_quality** — 0.7 × the share of required ability groups used, + 0.3 × the
  share of commands the target showed it ran. An ability counts as used only on evidence from
  the target (:mod:`loom_sim.harness.evidence`: an event naming it, a new file, a reply matching
  its pattern), never because the user typed it; a target that offers no abilities scores 0.
* **efficiency_cost_time** — 1 − the mean share of the budget used: turns of ``max_turns``,
  cost of ``max_cost_usd``, time of ``max_runtime_s``. Time counts in quarters of the budget,
  so that two runs of the same session score the same although their clocks differ.
* **resilience** — of the failed actions that had a next turn, the share followed within two
  turns by a different action that worked; 1 when nothing failed.

A session that completed no turn scores 0 on every component.
* **reflection_quality** — per reflection, schema validity (valid 1, repaired 0.75, invalid 0)
  × the mean of its specificity (distinct judgements written, tied to the turn's action or
  signals) and its novelty (1 − similarity to the previous reflection); averaged. A field that
  only echoes another field, its own name or a stock phrase counts as not written
  (:mod:`loom_sim.harness.reflection_check`), so "This is a code." in every field scores low.

Nothing here reads a clock or a path: the same records give the same scorecard, byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from loom_sim.harness import reflection_check as reflections
from loom_sim.harness import validity
from loom_sim.harness.packs import COMPONENTS, Scenario
from loom_sim.harness.records import HarnessTurn
from loom_sim.harness.stop import StopReason

STATUS_SCORE = {"valid": 1.0, "repaired": 0.75, "invalid": 0.0}


def _r(value: float) -> float:
    return round(float(value), 4)


@dataclass(frozen=True)
class Outcome:
    """How the session ended, as the scorecard needs it."""

    status: str  # done | error
    stop_reason: str | None
    elapsed_s: float
    cost_usd: float | None


def goal_progress(turns: list[HarnessTurn]) -> tuple[float, dict[str, Any]]:
    if not turns:
        return 0.0, {"criteria": {}}
    last = turns[-1].evaluation
    criteria = {r.id: {"met": r.met, "detail": r.detail} for r in last.results}
    return _r(last.progress), {"criteria": criteria}


def artifact_quality(turns: list[HarnessTurn]) -> tuple[float, dict[str, Any]]:
    measured = [a for t in turns for a in t.artifacts if a.quality is not None]
    if not measured:
        return 0.0, {"images": 0, "note": "no images produced"}
    mean = sum(a.quality for a in measured if a.quality is not None) / len(measured)
    best = max(measured, key=lambda a: a.quality or 0.0)
    return _r(mean), {"images": len(measured), "best": best.path, "best_quality": best.quality}


def abilities_used(turns: list[HarnessTurn]) -> list[str]:
    """Commands the target showed it ran (an event, a file, a matching reply), in order of
    first use; typing one is not using it."""
    used: dict[str, None] = {}
    for t in turns:
        if t.action.kind == "command" and t.action.name and t.ability_evidence:
            used.setdefault(t.action.name, None)
    return list(used)


def ability_usage(
    turns: list[HarnessTurn], scenario: Scenario, offered: bool = True
) -> tuple[float, dict[str, Any]]:
    groups = scenario.groups()
    commands = [t for t in turns if t.action.kind == "command"]
    detail: dict[str, Any] = {"required": ["|".join(g) for g in groups], "commands": len(commands)}
    if not offered:
        note = "the target offers no abilities: none is credited"
        return 0.0, {**detail, "covered": [], "commands_ok": 0, "used": [], "note": note}
    used = set(abilities_used(turns))
    covered = ["|".join(g) for g in groups if used.intersection(g)]
    ok = [t for t in commands if t.ability_evidence]
    coverage = len(covered) / len(groups) if groups else 1.0
    success = len(ok) / len(commands) if commands else (0.0 if groups else 1.0)
    detail.update(
        covered=covered,
        commands_ok=len(ok),
        used=sorted(used),
        evidence={
            t.action.name: t.ability_evidence for t in reversed(ok) if t.action.name is not None
        },
    )
    return _r(0.7 * coverage + 0.3 * success), detail


def efficiency(
    turns: list[HarnessTurn], scenario: Scenario, outcome: Outcome
) -> tuple[float, dict[str, Any]]:
    if not turns:
        return 0.0, {"note": "no turn completed"}
    budget = scenario.budget
    shares = {"turns": min(1.0, len(turns) / budget.max_turns)}
    if budget.max_cost_usd and outcome.cost_usd is not None:
        shares["cost"] = min(1.0, outcome.cost_usd / budget.max_cost_usd)
    if budget.max_runtime_s:
        quarters = math.floor(4 * min(1.0, outcome.elapsed_s / budget.max_runtime_s))
        shares["time"] = quarters / 4
    value = 1.0 - sum(shares.values()) / len(shares)
    return _r(value), {"budget_used": {k: _r(v) for k, v in shares.items()}}


def resilience(turns: list[HarnessTurn], outcome: Outcome) -> tuple[float, dict[str, Any]]:
    if not turns:
        return 0.0, {"note": "no turn completed"}
    chances = recovered = 0
    for i, t in enumerate(turns):
        if not t.failed:
            continue
        after = turns[i + 1 : i + 3]
        if not after and outcome.stop_reason != StopReason.CONSECUTIVE_FAILURES:
            continue  # the session ended before the user could react
        chances += 1
        if any(not n.failed and n.action.text != t.action.text for n in after):
            recovered += 1
    if chances == 0:
        return 1.0, {"failures": sum(t.failed for t in turns), "recovered": 0}
    detail = {"failures": sum(t.failed for t in turns), "recovered": recovered}
    return _r(recovered / chances), detail


def reflection_quality(turns: list[HarnessTurn]) -> tuple[float, dict[str, Any]]:
    if not turns:
        return 0.0, {"reflections": 0}
    scores: list[float] = []
    counts = {"valid": 0, "repaired": 0, "invalid": 0}
    hollow = 0
    previous = None
    for t in turns:
        counts[t.reflection_status] = counts.get(t.reflection_status, 0) + 1
        validity = STATUS_SCORE.get(t.reflection_status, 0.0)
        said = reflections.score(t.reflection, t.action.text, t.signals, previous, validity)
        if t.reflection_status != "invalid" and said < reflections.LOW * validity:
            hollow += 1
        scores.append(said)
        previous = t.reflection
    detail = {"reflections": len(turns), **counts, "saying_little": hollow}
    return _r(sum(scores) / len(scores)), detail


def scorecard(
    turns: list[HarnessTurn],
    scenario: Scenario,
    outcome: Outcome,
    offered: bool = True,
    detectors: dict[str, bool] | None = None,
) -> dict[str, Any]:
    """``offered``: whether the target offers the pack's abilities (a target that offers none
    makes no ability claims). ``detectors``: the detectors whose verdicts the card shows, and
    whether their measured figures apply (False: the pack gave its own); the card states
    them."""
    parts = {
        "goal_progress": goal_progress(turns),
        "artifact_quality_proxy": artifact_quality(turns),
        "ability_usage_quality": ability_usage(turns, scenario, offered),
        "efficiency_cost_time": efficiency(turns, scenario, outcome),
        "resilience": resilience(turns, outcome),
        "reflection_quality": reflection_quality(turns),
    }
    weights = scenario.scorecard.weights
    components = {
        name: {"value": parts[name][0], "weight": getattr(weights, name), **parts[name][1]}
        for name in COMPONENTS
    }
    total = sum(parts[n][0] * getattr(weights, n) for n in COMPONENTS)
    gate = scenario.scorecard.gate
    covered = len(parts["ability_usage_quality"][1]["covered"])
    fatal = outcome.stop_reason == StopReason.ADAPTER_FATAL
    checks: dict[str, dict[str, Any]] = {
        "goal_progress": {
            "value": parts["goal_progress"][0],
            "min": gate.min_goal_progress,
            "passed": parts["goal_progress"][0] >= gate.min_goal_progress,
        },
        "required_abilities_used": {
            "value": covered,
            "min": gate.min_required_abilities_used,
            "passed": covered >= gate.min_required_abilities_used,
        },
        "no_fatal_adapter_error": {
            "value": not fatal,
            "passed": gate.allow_adapter_fatal or not fatal,
        },
    }
    shown = detectors if detectors is not None else dict.fromkeys(validity.MEASURED, True)
    return {
        "scenario": scenario.id,
        "score": _r(total),
        "passed": all(c["passed"] for c in checks.values()),
        "gate": checks,
        "components": components,
        "detectors": {name: validity.figures(name, ok) for name, ok in shown.items()},
    }
