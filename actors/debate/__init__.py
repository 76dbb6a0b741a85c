"""The debate's actors, installed as ``loom_sim.debate.actors``: the debater (one per persona),
the moderator (who speaks next, with which intent) and the detector (disagreements, room
exits, crux cards). Importing this package registers them (entry point ``debate`` of the
``loom_sim.actors`` group); a new kind is a new module here plus one import below."""

from loom_sim.debate.actors import debater, detector, moderator

__all__ = ["debater", "detector", "moderator"]
