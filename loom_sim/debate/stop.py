"""Why a debate stops: every reason and the rule that decides it, declared here once.

A reason is one member of :class:`DebateStopReason` and one rule below it: a function of the
debate's settings and the main-chat turns so far that returns the sentence saying what happened
(or None), registered with :func:`stop_rule`. Before each turn is assigned the rules are checked
by their order and the first that holds ends the debate (the message budget first, then the
failed turns in a row). ``summary.json`` holds the reason's key (``stop_reason``) and the
sentence (``stop_detail``); the report shows the sentence.

Debates before the key was typed wrote only the sentence in ``stop_reason``;
:func:`from_sentence` reads one back into its key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from loom_sim.core.stops import Stop as CoreStop
from loom_sim.core.stops import StopReason
from loom_sim.debate.records import ChatTurn
from loom_sim.debate.settings import DebateSettings

__all__ = [
    "RULES",
    "DebateStopReason",
    "Stop",
    "StopRule",
    "before_turn",
    "from_sentence",
    "reasons_markdown",
]


class DebateStopReason(StopReason):
    """Why a debate ended (its ``summary.json``'s ``stop_reason``)."""

    MAX_MESSAGES = "max_messages"
    CONSECUTIVE_FAILURES = "consecutive_failures"


Stop = CoreStop[DebateStopReason]  # why a debate ended: a debate reason and a sentence

#: (the debate's settings, the main-chat turns so far, said or failed) -> the sentence, or None.
Check = Callable[[DebateSettings, list[ChatTurn]], str | None]


@dataclass(frozen=True)
class StopRule:
    reason: DebateStopReason
    order: int
    check: Check
    when: str  # for people: the docs' table (the check's docstring)


RULES: list[StopRule] = []  # by order: the first that holds stops the debate


def stop_rule(reason: DebateStopReason, *, order: int) -> Callable[[Check], Check]:
    """Register the decorated check as the rule for ``reason``, checked at ``order``; its
    docstring says when it holds."""

    def register(check: Check) -> Check:
        if any(rule.reason is reason for rule in RULES):
            raise ValueError(f"two debate stop rules for {reason.value!r}")
        RULES.append(StopRule(reason, order, check, " ".join((check.__doc__ or "").split())))
        RULES.sort(key=lambda rule: rule.order)
        return check

    return register


def before_turn(settings: DebateSettings, turns: list[ChatTurn]) -> Stop | None:
    """Why the debate ends before its next turn, or None when the turn is due."""
    for rule in RULES:
        detail = rule.check(settings, turns)
        if detail is not None:
            return Stop(rule.reason, detail)
    return None


@stop_rule(DebateStopReason.MAX_MESSAGES, order=10)
def _max_messages(settings: DebateSettings, turns: list[ChatTurn]) -> str | None:
    """`messages` main-chat turns were taken, said or failed"""
    if len(turns) >= settings.messages:
        return f"budget: {settings.messages} messages"
    return None


@stop_rule(DebateStopReason.CONSECUTIVE_FAILURES, order=20)
def _consecutive_failures(settings: DebateSettings, turns: list[ChatTurn]) -> str | None:
    """the last `max_failed_in_a_row` turns failed"""
    failing = 0
    for past in reversed(turns):
        if past.said:
            break
        failing += 1
    if failing >= settings.max_failed_in_a_row:
        return f"{failing} failed turns in a row"
    return None


def reasons_markdown() -> str:
    """The table of stop reasons in ``docs/debates.md``, in the order they are checked."""
    rows = ["| stop reason | when |", "| --- | --- |"]
    rows += [f"| `{rule.reason.value}` | {rule.when} |" for rule in RULES]
    return "\n".join(rows)


# The sentences the rules write, as earlier debates wrote them in place of the key.
_SENTENCES = (
    (re.compile(r"budget: \d+ messages"), DebateStopReason.MAX_MESSAGES),
    (re.compile(r"\d+ failed turns in a row"), DebateStopReason.CONSECUTIVE_FAILURES),
)


def from_sentence(text: str) -> DebateStopReason | None:
    """The reason an earlier debate's sentence stands for; None for one no rule writes."""
    for pattern, reason in _SENTENCES:
        if pattern.fullmatch(text):
            return reason
    return None
