"""How many threads CPU-bound model work may use: the embedded llama.cpp model, ONNX Runtime.

``os.cpu_count()`` is the machine's cores, not the ones this process may run on: under a CPU
affinity mask (a container, ``taskset``, a shared CI runner) llama.cpp given every core spins
its threads against each other and collapses. So the default is the cores in this process's
affinity mask, and ``LOOM_SIM_THREADS`` overrides it (a busy machine may want fewer).
"""

from __future__ import annotations

import os

from loom_sim.errors import LoomError

THREADS_ENV = "LOOM_SIM_THREADS"


def threads() -> int:
    """``LOOM_SIM_THREADS`` if set, else the cores this process may run on (at least 1)."""
    given = os.environ.get(THREADS_ENV, "").strip()
    if given:
        try:
            count = int(given)
        except ValueError:
            count = 0
        if count < 1:
            raise LoomError(f"{THREADS_ENV}={given!r}: give a whole number of threads, 1 or more")
        return count
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux: no affinity to ask about
        return max(1, os.cpu_count() or 1)
