"""loom-sim's own monitors, registered like a package's: importing this package registers them
(the ``loom_sim.monitors`` entry point ``builtin`` names it).

In registry order, which is the order a draft's findings, re-prompts and events are written in:
capitulation (10), repetition (20), stagnation (30, a redirect rather than findings),
revelations (40, what a committed message reveals). A further monitor is a module here and one
import below.
"""

from loom_sim.rollout.monitors.builtin import capitulation, repetition, revelations, stagnation

__all__ = ["capitulation", "repetition", "revelations", "stagnation"]
