"""The rollout's monitors: checks of the persona's drafts and messages.

Every monitor is registered (:mod:`loom_sim.plugins.monitors`) and asked by the monitor actor
through :class:`~loom_sim.rollout.monitors.base.Monitors`. loom-sim's own are in
:mod:`~loom_sim.rollout.monitors.builtin` (repetition, capitulation, stagnation, revelations);
the modules beside it hold what they decide with (the repetition guard, capitulation phrases,
concessions and revelations by meaning, ``meaning``) and what they share (``context``). The
``loom_sim.monitors`` entry point ``builtin`` names the ``builtin`` package, so importing it
registers them; a package's own monitors come through its own entry point.
"""
