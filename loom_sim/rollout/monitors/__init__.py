"""The rollout's monitors: checks of the persona's drafts and messages.

The checks loom-sim has always run (``repetition``, ``capitulation``, ``concession``,
``revelations``; stagnation and convergence in :mod:`loom_sim.signals.stagnation`) are called
by the monitor actor itself and keep their config sections. A further monitor is a module here
holding a :class:`~loom_sim.rollout.monitors.base.Monitor` registered with
:func:`loom_sim.plugins.monitors.monitor`, plus one import below: the ``loom_sim.monitors``
entry point ``builtin`` names this package, so importing it registers them. A package's own
monitors come through its own entry point.
"""
