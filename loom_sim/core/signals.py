"""SIGTERM is Ctrl-C: a job stopped by its scheduler leaves what Ctrl-C leaves.

Batch schedulers, Ray, containers (``docker stop``) and ``kill`` stop a job with SIGTERM. Left
to its default, SIGTERM kills loom-sim on the spot: no message, no resume command, files
closed by nobody. Handled as Ctrl-C, it gets the clean stop every command already has for
Ctrl-C — every completed turn saved, what was saved and the command that continues said,
exit status 130 — and a second SIGTERM, like a second Ctrl-C, quits at once.

It is done by handing SIGTERM to whatever answers SIGINT at that moment (the clean stop of
:mod:`loom_sim.core.interrupt`, trio's, Python's own), so each command's Ctrl-C
behaviour is
its SIGTERM behaviour with nothing written twice. Where SIGINT is ignored — a job started in
the background by a script inherits that — SIGTERM still stops the work as Ctrl-C would.
"""

from __future__ import annotations

import signal
from types import FrameType

__all__ = ["sigterm_as_ctrl_c"]


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    answer = signal.getsignal(signal.SIGINT)
    if callable(answer):
        answer(signal.SIGINT, frame)
    else:  # SIGINT ignored or left to the system: stop as Python's Ctrl-C does
        raise KeyboardInterrupt


def sigterm_as_ctrl_c() -> None:
    """From now on, SIGTERM to this process is Ctrl-C (call it from the main thread, once, as a
    command starts)."""
    signal.signal(signal.SIGTERM, _as_ctrl_c)
