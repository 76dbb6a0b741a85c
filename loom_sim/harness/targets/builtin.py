"""loom-sim's own adapter kinds: importing this module registers them (the
``loom_sim.adapters`` entry point ``builtin`` names it)."""

from loom_sim.harness.targets import http, model, pty

__all__ = ["http", "model", "pty"]
