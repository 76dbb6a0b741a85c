"""Injection scheduling: full every f turns from 0, reminders between, nothing otherwise."""

from __future__ import annotations

import pytest

from loom_sim.assembler import Assembler, InjectionKind, InjectionScheduler
from loom_sim.config.spec import InjectionSpec
from tests.factories import build, minimal


def kinds(spec: InjectionSpec, turns: int) -> list[str]:
    scheduler = InjectionScheduler(spec)
    return [scheduler.kind(t).value for t in range(turns)]


def test_full_injection_at_multiples_of_frequency():
    got = kinds(InjectionSpec(frequency=5, reminder_frequency=0), 16)
    assert [t for t, k in enumerate(got) if k == "full"] == [0, 5, 10, 15]
    assert set(got) == {"full", "none"}


def test_reminders_between_full_injections_but_never_on_them():
    got = kinds(InjectionSpec(frequency=5, reminder_frequency=2), 12)
    assert got == [
        "full",
        "none",
        "reminder",
        "none",
        "reminder",
        "full",
        "reminder",
        "none",
        "reminder",
        "none",
        "full",
        "none",
    ]


@pytest.mark.parametrize("frequency,reminder", [(1, 1), (3, 2), (4, 2), (7, 3), (10, 1)])
def test_every_turn_gets_exactly_the_kind_the_rule_says(frequency, reminder):
    got = kinds(InjectionSpec(frequency=frequency, reminder_frequency=reminder), 60)
    for turn, kind in enumerate(got):
        if turn % frequency == 0:
            assert kind == "full"
        elif turn % reminder == 0:
            assert kind == "reminder"
        else:
            assert kind == "none"


def test_full_on_phase_change_adds_full_injections_at_phase_starts():
    data = minimal()
    data["interaction"] = {
        "injection": {"frequency": 100, "reminder_frequency": 0, "full_on_phase_change": True}
    }
    assembler = Assembler(build(data), turns=20)
    full = [p.turn for p in assembler.plans() if p.injection == InjectionKind.FULL]
    assert full == [0, 10]  # phase "late" starts at 50% of 20 turns


def test_reminder_text_is_the_filled_in_template():
    data = minimal()
    data["interaction"] = {
        "injection": {
            "frequency": 5,
            "reminder_frequency": 2,
            "reminder_template": "[{name} t{turn}/{turns} {current_phase} {tension:.2f}]",
        }
    }
    plan = Assembler(build(data), turns=20).plan(12)
    assert plan.injection == "reminder"
    assert plan.reminder == "[Ada t13/20 late 0.52]"
    assert Assembler(build(data), turns=20).plan(10).reminder is None


def test_a_phase_change_reaches_the_persona_by_default():
    data = minimal()
    data["interaction"] = {"injection": {"frequency": 100, "reminder_frequency": 0}}
    assembler = Assembler(build(data), turns=20)
    full = [p.turn for p in assembler.plans() if p.injection == InjectionKind.FULL]
    assert full == [0, 10]  # phase "late" starts at 50% of 20 turns: never a stale MUST DO


def test_without_full_on_phase_change_the_phase_start_gets_a_reminder_with_the_new_must_do():
    data = minimal()
    data["interaction"] = {
        "injection": {"frequency": 100, "reminder_frequency": 0, "full_on_phase_change": False}
    }
    plans = list(Assembler(build(data), turns=20).plans())
    assert [p.turn for p in plans if p.injection != InjectionKind.NONE] == [0, 10]
    start = plans[10]
    assert start.injection == InjectionKind.REMINDER and start.phase == "late"
    assert start.prompt is not None
    assert '[NEW PHASE "late" from this message on. Your MUST DO is now:' in start.reminder
    assert start.prompt.must_do in start.reminder
    assert plans[12].reminder is None


def test_a_refresh_forces_a_full_injection():
    scheduler = InjectionScheduler(InjectionSpec(frequency=5, reminder_frequency=2))
    assert scheduler.kind(3) == InjectionKind.NONE
    assert scheduler.kind(3, refresh=True) == InjectionKind.FULL
