"""Actors of a rollout (installed as ``loom_sim.actors``).

Each actor is a trio task that owns one receive channel and its own state; the persona,
interlocutor, adversary, monitor and judge live here, one module per actor.
"""
