"""The persona rollout's actors, installed as ``loom_sim.rollout.actors``: the persona, the
interlocutor (the model under evaluation), the adversaries that can take its place and the
monitor. Importing this package registers them (entry point ``rollout`` of the
``loom_sim.actors`` group); a new kind is a new module here plus one import below."""

from loom_sim.rollout.actors import adversary, interlocutor, monitor, persona

__all__ = ["adversary", "interlocutor", "monitor", "persona"]
