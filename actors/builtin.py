"""The actor kinds every system may build: the judge (rollout scoring and the probe ask it).
The systems' own kinds register from their packages (``loom_sim.rollout.actors``,
``loom_sim.harness.actors``, ``loom_sim.debate.actors``). Importing this module registers the
judge (the ``loom_sim.actors`` entry point ``builtin`` names it)."""

from loom_sim.actors import judge

__all__ = ["judge"]
