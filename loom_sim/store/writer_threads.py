"""File work that may block, moved off the event loop to two dedicated writer threads.

Creating a file or a folder can cost a millisecond of kernel time: measured 0.4-0.9 ms on
this project's ext4 test machine, whose disk sees much creation and deletion (ext4 skips
inodes freed in the last minutes when it allocates one). A rollout creates three when its
first turn ends (its folder, turn log and trace) and two more for its transcript; with
hundreds of rollouts in step, doing that on the event loop held every rollout's next model
call for half a second.

Why two threads: forty (trio's default limit) queue on the same file-system locks, and each
one coming back from its system call takes the interpreter's lock from the event loop, which
then served almost nothing for half a second. One thread does the work without contention
but too slowly (256 rollouts' files: 0.69 s); two took 0.33 s, four 0.21 s, and at 256
rollouts two and four gave the same efficiency.

Why not always: a thread helps only where a core is free to run it. A worker process of the
``processes`` executor whose share of the cores is one has none (its sibling workers hold the
others), and there a writer thread only took turns with the event loop for the interpreter's
lock: each of its dozen system calls per rollout handed the lock back and forth, the main
thread dropping it every time the writer came back (traced at 128 rollouts: 15,800 waits and
wakes on the lock, and the writer threads busy for 0.7 s at the start and 0.6 s at the end
for 20 ms of file-system work). Such a worker writes on its own thread (:func:`write_inline`):
1,024 rollouts on two workers, two alternated rounds, read 0.43 and 0.42 with writer threads,
0.47 and 0.45 without.

Why threads of their own, not trio's thread cache: the cache's threads also run the embedding
model, and glibc gives each thread that allocates its own malloc arena. Writes taking cached
threads spread the model's work over more of them, and so over more arenas: peak RSS at 256
rollouts went from 288 to 337-406 MiB; with threads of their own, 286-288.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar, TypeVarTuple

import outcome
import trio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

WRITER_THREADS = 2

#: Whether this process does its file work on the calling thread (:func:`write_inline`).
_INLINE = [False]


def write_inline(inline: bool = True) -> None:
    """Do this process's file work on the calling thread from now on (or again in the writer
    threads): for a process with no core to spare for them (see the module)."""
    _INLINE[0] = inline


def _writers() -> ThreadPoolExecutor:
    """This process's writer threads (the pool starts them on first use). Keyed by process:
    a forked child inherits the pool but not its threads, and would wait on it forever."""
    return _pool_of(os.getpid())


@functools.cache
def _pool_of(pid: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="loom-sim-writer")


async def in_writer_thread(work: Callable[[*Ts], T], *args: *Ts) -> T:
    """``work(*args)`` in a writer thread (on this one, after :func:`write_inline`); its result
    returned, its exception raised here.
    A caller already cancelled does not start it; once started it runs to its end even if
    the caller is cancelled meanwhile (a file is never left half written by a cancellation),
    as ``trio.to_thread.run_sync`` does by default."""
    await trio.lowlevel.checkpoint_if_cancelled()
    if _INLINE[0]:
        return work(*args)
    token = trio.lowlevel.current_trio_token()
    task = trio.lowlevel.current_task()

    def deliver(future: Future[T]) -> None:
        token.run_sync_soon(trio.lowlevel.reschedule, task, outcome.capture(future.result))

    _writers().submit(work, *args).add_done_callback(deliver)
    result: T = await trio.lowlevel.wait_task_rescheduled(
        lambda _: trio.lowlevel.Abort.FAILED  # the work cannot be stopped: wait for it
    )
    return result
