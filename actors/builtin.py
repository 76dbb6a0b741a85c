"""The persona rollout's actor kinds (the harness's and the debate's register from their own
packages): importing this module registers them (the ``loom_sim.actors``
entry point ``builtin`` names it). A new kind is a new module here plus one import below."""

from loom_sim.actors import (
    adversary,
    interlocutor,
    judge,
    monitor,
    persona,
)

__all__ = [
    "adversary",
    "interlocutor",
    "judge",
    "monitor",
    "persona",
]
