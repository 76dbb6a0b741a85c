"""loom-sim's own scorers, one module each: importing this package registers them (the
``loom_sim.scorers`` entry point ``builtin`` names it). A new scorer is a new module here plus
one import below; a package's own scorers come through its own entry point."""

from loom_sim.rollout.scoring.scorers import (
    capitulation,
    capitulation_judged,
    consistency,
    dcs,
    dimensions,
    fidelity,
    hes,
    markers,
    naturalness,
    persona_adherence,
    sis,
    spiral,
    spiral_final,
    stagnation,
    trajectory,
)

__all__ = [
    "capitulation",
    "capitulation_judged",
    "consistency",
    "dcs",
    "dimensions",
    "fidelity",
    "hes",
    "markers",
    "naturalness",
    "persona_adherence",
    "sis",
    "spiral",
    "spiral_final",
    "stagnation",
    "trajectory",
]
