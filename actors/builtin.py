"""loom-sim's own actor kinds: importing this module registers them (the ``loom_sim.actors``
entry point ``builtin`` names it). A new kind is a new module here plus one import below."""

from loom_sim.actors import (
    adversary,
    debater,
    detector,
    evaluator,
    interlocutor,
    judge,
    moderator,
    monitor,
    persona,
    reflector,
    simulated_user,
    target,
)

__all__ = [
    "adversary",
    "debater",
    "detector",
    "evaluator",
    "interlocutor",
    "judge",
    "moderator",
    "monitor",
    "persona",
    "reflector",
    "simulated_user",
    "target",
]
