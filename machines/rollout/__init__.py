"""The persona rollout's machine, installed as ``loom_sim.rollout.machines``: one rollout's
turns (``rollout``), a table on the shared engine."""
