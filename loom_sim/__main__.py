"""``python -m loom_sim`` is ``loom-sim``."""

from loom_sim.cli import main

main()
