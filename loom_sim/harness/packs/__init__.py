"""Scenario packs for the simulated-user harness: personas, scenarios, targets (see
docs/harness.md). Loaded with located errors; the JSON Schema comes from the same models."""

from loom_sim.harness.packs.load import LoadedPack, load_pack
from loom_sim.harness.packs.spec import (
    COMPONENTS,
    ROLES,
    ArtifactsCriterion,
    Criterion,
    EventsCriterion,
    JudgedCriterion,
    OutputCriterion,
    Pack,
    Persona,
    Policy,
    Scenario,
)

__all__ = [
    "COMPONENTS",
    "ROLES",
    "ArtifactsCriterion",
    "Criterion",
    "EventsCriterion",
    "JudgedCriterion",
    "LoadedPack",
    "OutputCriterion",
    "Pack",
    "Persona",
    "Policy",
    "Scenario",
    "load_pack",
]
