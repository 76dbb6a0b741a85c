"""Why a harness session stops: every reason, and the rules checked after each turn, declared
here once.

A stop reason is one member of :class:`StopReason` and, when a turn's outcome decides it, one
rule below it: a function of the scenario, the turns so far and the running time that returns
the sentence saying what happened (or None), registered with :func:`stop_rule`. After every
turn the rules are checked by their order and the first that holds ends the session: success
first (a goal reached on the last allowed turn is a success), then the budgets, then the turn
limit. The few reasons the session itself decides mid-turn (the user gives up, the target cannot
go on, the runtime budget runs out while a reply is awaited) are listed in :data:`SET_BY_SESSION`
with when they happen. The table of reasons in ``docs/harness.md`` is generated from both
(``scripts/gen-docs``), so a new reason is written nowhere else.

A rule's reason need not be one of the harness's own: any :class:`loom_sim.core.stops.StopReason`
member will do (a plug-in declares its own enum), so a plug-in adds a way for a session to stop
without editing loom-sim; records and summaries hold the reason's plain string value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from loom_sim.core import stops as core_stops
from loom_sim.core.stops import Stop as CoreStop
from loom_sim.harness.packs import Scenario
from loom_sim.harness.records import HarnessTurn
from loom_sim.plugins import Plugin, PluginError, Registry

__all__ = [
    "RULES",
    "SET_BY_SESSION",
    "Stop",
    "StopReason",
    "StopRule",
    "after_turn",
    "reasons_markdown",
    "rule_added",
    "stop_rule",
]


class StopReason(core_stops.StopReason):
    """Why a session ended, as its ``summary.json`` says (``stop_reason``)."""

    SUCCESS = "success"
    MAX_COST = "max_cost"
    MAX_RUNTIME = "max_runtime"
    CONSECUTIVE_FAILURES = "consecutive_failures"
    MAX_TURNS = "max_turns"
    USER_GAVE_UP = "user_gave_up"
    ADAPTER_FATAL = "adapter_fatal"


#: The reasons the session decides itself, mid-turn rather than after one, and when.
SET_BY_SESSION: dict[StopReason, str] = {
    StopReason.USER_GAVE_UP: "the user chose to leave (offered from turn `policy.give_up_after`), "
    "or its patience ran out: `persona.patience` reflections in a row below "
    "`policy.give_up_below_confidence`",
    StopReason.ADAPTER_FATAL: "the target cannot go on: the program exited (its status and last "
    "words are in `session.json`), the server refused or kept failing; the session ends in "
    "`error`",
}


# Why a session ended: a reason (the harness's own, or a plug-in rule's) and a sentence.
Stop = CoreStop[core_stops.StopReason]

#: (scenario, turns recorded so far, seconds of running time) -> the sentence, or None.
Check = Callable[[Scenario, list[HarnessTurn], float], str | None]


@dataclass(frozen=True, kw_only=True)
class StopRule(Plugin):
    """One way a session stops after a turn. ``name`` is the reason's value, ``summary`` says
    when it holds (the docs' table), ``order`` where it is checked."""

    reason: core_stops.StopReason
    check: Check


#: The rules checked after every turn, by order. A plug-in module named in the
#: ``loom_sim.harness_stops`` entry-point group registers its own with :func:`stop_rule`.
RULES: Registry[StopRule] = Registry("harness stop rule", "loom_sim.harness_stops")


def stop_rule(reason: core_stops.StopReason, *, order: int) -> Callable[[Check], Check]:
    """Register the decorated check as the rule for ``reason``, checked at ``order``; its
    docstring says when it holds. One rule per reason, and none for a reason the session sets
    itself: refused, so no key has two meanings."""

    def register(check: Check) -> Check:
        RULES.add(_rule(reason, check, order))
        return check

    return register


@contextmanager
def rule_added(reason: core_stops.StopReason, check: Check, *, order: int) -> Iterator[StopRule]:
    """Register a rule for the duration of a ``with`` block (tests, notebooks)."""
    with RULES.added(_rule(reason, check, order)) as entry:
        yield entry


def _rule(reason: core_stops.StopReason, check: Check, order: int) -> StopRule:
    if reason.value in SET_BY_SESSION:
        raise PluginError(
            f"the session itself stops for {reason.value!r}; a rule needs a key of its own"
        )
    when = " ".join((check.__doc__ or "").split())
    return StopRule(name=reason.value, summary=when, order=order, reason=reason, check=check)


def after_turn(scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float) -> Stop | None:
    """The first rule that holds after the last of ``turns``, or None to go on."""
    for rule in RULES:
        detail = rule.check(scenario, turns, elapsed_s)
        if detail is not None:
            return Stop(rule.reason, detail)
    return None


# ─── the harness's own rules, in the order they are checked ─────────────────


@stop_rule(StopReason.SUCCESS, order=10)
def _success(scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float) -> str | None:
    """every success criterion is met"""
    results = turns[-1].evaluation.results
    if results and all(r.met is True for r in results):
        return "every success criterion met"
    return None


@stop_rule(StopReason.MAX_COST, order=20)
def _max_cost(scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float) -> str | None:
    """models' cost plus the `cost_usd` the target's events report reaches
    `budget.max_cost_usd`; a run whose `max_cost_usd` counts a model with no known price is
    refused before it starts, as `run --max-cost` is, since that cap could never be kept"""
    cap, cost = scenario.budget.max_cost_usd, total_cost(turns)
    if cap is not None and cost is not None and cost >= cap:
        return f"${cost:.4f} spent of ${cap:g}"
    return None


@stop_rule(StopReason.MAX_RUNTIME, order=30)
def _max_runtime(scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float) -> str | None:
    """`budget.max_runtime_s` of wall time (also mid-turn: the turn in progress is dropped)"""
    budget = scenario.budget.max_runtime_s
    if budget is not None and elapsed_s >= budget:
        return runtime_used(budget)
    return None


@stop_rule(StopReason.CONSECUTIVE_FAILURES, order=40)
def _consecutive_failures(
    scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float
) -> str | None:
    """`budget.max_consecutive_failures` failed actions in a row"""
    failed = failures_in_a_row(turns)
    if failed >= scenario.budget.max_consecutive_failures:
        return f"{failed} failed actions in a row"
    return None


@stop_rule(StopReason.MAX_TURNS, order=50)
def _max_turns(scenario: Scenario, turns: list[HarnessTurn], elapsed_s: float) -> str | None:
    """`budget.max_turns` turns"""
    if len(turns) >= scenario.budget.max_turns:
        return f"{len(turns)} turns"
    return None


def runtime_used(budget: float) -> str:
    """The sentence for a spent runtime budget, after a turn or in the middle of one."""
    return f"{budget:g} s of runtime used"


def reasons_markdown() -> str:
    """The table of stop reasons in ``docs/harness.md``: the rules in the order they are
    checked, then the reasons the session sets itself."""
    rows = ["| stop reason | when |", "| --- | --- |"]
    rows += [f"| `{rule.name}` | {rule.summary} |" for rule in RULES]
    rows += [
        f"| `{reason.value}` | {' '.join(when.split())} |"
        for reason, when in SET_BY_SESSION.items()
    ]
    return "\n".join(rows)


# ─── what the rules count ───────────────────────────────────────────────────


def total_cost(turns: list[HarnessTurn]) -> float | None:
    """Models' cost (None when any call's price is unknown) plus what the target reported."""
    total = 0.0
    for turn in turns:
        for usage in turn.usage.values():
            if usage.cost_usd is None:
                return None
            total += usage.cost_usd
        total += turn.target_cost_usd
    return round(total, 6)


def failures_in_a_row(turns: list[HarnessTurn]) -> int:
    count = 0
    for turn in reversed(turns):
        if not turn.failed:
            break
        count += 1
    return count
