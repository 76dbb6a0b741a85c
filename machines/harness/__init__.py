"""The harness's machine, installed as ``loom_sim.harness.machines``: one session
(``session``), a table on the shared engine."""
