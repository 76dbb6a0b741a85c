"""The harness's actors, installed as ``loom_sim.harness.actors``: the simulated user, the
target (a program behind an adapter), the reflector and the evaluator. Importing this package
registers them (entry point ``harness`` of the ``loom_sim.actors`` group); a new kind is a new
module here plus one import below."""

from loom_sim.harness.actors import evaluator, reflector, simulated_user, target

__all__ = ["evaluator", "reflector", "simulated_user", "target"]
