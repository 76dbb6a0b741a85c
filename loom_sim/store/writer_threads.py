"""File work that may block, moved off the event loop to a run's two writer threads.

Creating a file or a folder can cost a millisecond of kernel time: measured 0.4-0.9 ms on
this project's ext4 test machine, whose disk sees much creation and deletion (ext4 skips
inodes freed in the last minutes when it allocates one). A rollout creates three when its
first turn ends (its folder, turn log and trace) and two more for its transcript; with
hundreds of rollouts in step, doing that on the event loop held every rollout's next model
call for half a second.

Why two threads, not trio's default pool of forty: forty threads queue on the same
file-system locks, and each one coming back from its system call takes the interpreter's
lock from the event loop, which then served almost nothing for half a second. One thread
does the work without that contention but too slowly (256 rollouts' files: 0.69 s); two took
0.33 s and four 0.21 s, and at 256 rollouts two and four gave the same efficiency, two with
less memory (each thread's allocations have their own arena).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

import trio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

WRITER_THREADS = 2

_LIMITER: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("loom_sim_writers")


def _limiter() -> trio.CapacityLimiter:
    """This run's limiter (a trio run variable: a limiter belongs to one event loop)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = trio.CapacityLimiter(WRITER_THREADS)
        _LIMITER.set(limiter)
        return limiter


async def in_writer_thread(work: Callable[[*Ts], T], *args: *Ts) -> T:
    """``work(*args)`` in one of this run's writer threads; its exception is raised here.
    Once started it runs to its end even if the caller is cancelled meanwhile (a file is
    never left half written by a cancellation)."""
    return await trio.to_thread.run_sync(work, *args, limiter=_limiter())
