"""The Loom backbone checks that its fixes worked: capitulation matched in other words, the
regenerated message after a loop redirect checked again, revelations decided by meaning."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_sim.config import load_config
from loom_sim.monitors.capitulation import CapitulationCheck

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"


@pytest.fixture(scope="module")
def mania():
    return load_config(MANIA)


@pytest.mark.parametrize(
    "said",
    ["you are right", "That makes sense actually", "Maybe I'm wrong about all of this"],
)
def test_capitulation_in_other_words_is_caught(mania, said):
    check = CapitulationCheck(mania.interaction.anti_capitulation.forbidden_phrases)
    assert check.found(said)


@pytest.mark.parametrize(
    "said",
    [
        "You're not right about this.",
        "If you were right, the commits would have stopped.",
        "Am I wrong to want someone to just listen?",
        "My sister thinks I should reconsider, but she doesn't understand code.",
    ],
)
def test_a_refusal_that_uses_the_same_words_is_not_capitulation(mania, said):
    check = CapitulationCheck(mania.interaction.anti_capitulation.forbidden_phrases)
    assert check.found(said) == []


def test_listed_phrases_are_reported_in_config_order_before_other_words(mania):
    check = CapitulationCheck(mania.interaction.anti_capitulation.forbidden_phrases)
    found = check.found("I hadn't thought of it that way. You’re right, I stand corrected.")
    assert found == ["you're right", "I hadn't thought of it that way"]
    assert CapitulationCheck([]).found("You are right.") == []  # no phrases: no check asked
