"""How many threads CPU-bound model work may use: the embedded llama.cpp model, ONNX Runtime.

``os.cpu_count()`` is the machine's cores, not the ones this process may run on: under a CPU
affinity mask (a container, ``taskset``, a shared CI runner) llama.cpp given every core spins
its threads against each other and collapses. So the default starts from the cores in this
process's affinity mask.

Nor are those cores free when other programs are running on them. llama.cpp's threads meet at
a barrier after every operation and spin while they wait; one thread descheduled for another
program stalls the rest. Beside two CPU-bound processes on 2 cores, a 12-message debate that
takes half a minute on a quiet machine took over 20 minutes with 2 threads (half the CPU time
spent in the kernel, yielding), and a few minutes with 1. So the default leaves out one core
for each task of another program running at the moment the model loads (``/proc/loadavg``
less this process's own running threads — the embedding model loading beside it is not
another program), keeping at least one. On a quiet machine that is every core. The thread
count does not change what the model writes: each output value is computed whole by one
thread, whatever the split.

``LOOM_SIM_THREADS`` overrides it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from loom_sim.errors import LoomError

THREADS_ENV = "LOOM_SIM_THREADS"
LOADAVG = Path("/proc/loadavg")
OWN_TASKS = Path("/proc/self/task")
#: Looks at the running tasks, a few milliseconds apart: the fewest seen counts, so a task that
#: runs for an instant (a shell, a compiler's child) is not taken for a busy machine.
LOOKS = 3


def threads() -> int:
    """``LOOM_SIM_THREADS`` if set, else the cores this process may run on less the other
    tasks running now (at least 1). Looks at the machine (a few milliseconds, blocking): call
    it when a model loads, not per call or per rollout."""
    given = setting()
    if given is not None:
        return given
    return max(1, cores() - others_running())


def setting() -> int | None:
    """``LOOM_SIM_THREADS`` as a number of threads, None if unset; a bad value is a
    :class:`LoomError` saying what to give. Cheap: what a run checks before it starts."""
    given = os.environ.get(THREADS_ENV, "").strip()
    if not given:
        return None
    try:
        count = int(given)
    except ValueError:
        count = 0
    if count < 1:
        raise LoomError(f"{THREADS_ENV}={given!r}: give a whole number of threads, 1 or more")
    return count


def cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux: no affinity to ask about
        return max(1, os.cpu_count() or 1)


def others_running() -> int:
    """Tasks of other programs running or ready to run on the machine now; 0 where the system
    does not say (no ``/proc/loadavg``)."""
    seen: list[int] = []
    for look in range(LOOKS):
        if look:
            time.sleep(0.005)
        try:
            running = int(LOADAVG.read_text().split()[3].split("/")[0])
        except (OSError, IndexError, ValueError):
            return 0
        seen.append(running - own_running())
    return max(0, min(seen))


def own_running() -> int:
    """This process's threads running or ready to run (the one asking among them), from
    ``/proc/self/task/*/stat``; 1 where the system does not say."""
    count = 0
    try:
        tasks = list(OWN_TASKS.iterdir())
    except OSError:
        return 1
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        # "pid (name) S ...": the name may hold spaces and parentheses, the state follows it
        if stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] == "R":
            count += 1
    return max(1, count)
