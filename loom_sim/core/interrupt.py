"""Ctrl-C for the commands that run models: the first stops the work cleanly, the second at once.

A run interrupted by Ctrl-C must leave what a kill leaves, and better: every completed turn on
disk, the files closed, and one plain sentence saying what was saved and which command goes
on. So the first Ctrl-C (SIGINT) does not raise ``KeyboardInterrupt`` somewhere inside a
nursery (where it would come out as an exception group): it cancels the work's scope, lets the
rollouts and scorers unwind through their ``finally`` blocks, and :func:`run` then raises
:class:`Interrupted` for the command to turn into its message.

Unwinding can wait on something that cannot be cancelled — a llama.cpp generation in a worker
thread finishes its reply first — so the first Ctrl-C says that a second one quits at once,
and the second does: the process exits with status 130 without waiting for anything. What is
lost then is what a kill loses (the turn in progress), and the resume command still works.

SIGTERM (a scheduler, Ray or a container stopping the job) arrives here as Ctrl-C: the
command line hands it to the SIGINT handler (:mod:`loom_sim.core.signals`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import trio

from loom_sim.errors import LoomError

T = TypeVar("T")

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells expect of a program stopped by Ctrl-C


class Interrupted(LoomError):
    """The work was stopped by Ctrl-C after it wound down; the command says what was kept."""

    exit_code = EXIT_INTERRUPTED


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(
    work: Callable[..., Awaitable[T]],
    *args: object,
    stopping: str = "stopping: finishing the call in progress and saving what is complete",
    quitting: str = "quit at once; completed turns are on disk",
) -> T:
    """``trio.run(work, *args)``, stopped cleanly by a first Ctrl-C (then :class:`Interrupted`
    is raised) and at once by a second (the process exits with status 130, ``quitting`` said).
    Outside the main thread signals cannot be caught, and ``work`` simply runs."""
    if threading.current_thread() is not threading.main_thread():
        return trio.run(work, *args)

    async def watch(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
        async for _ in signals:
            if scope.cancel_called:
                _say(quitting)
                os._exit(EXIT_INTERRUPTED)
            _say(f"{stopping} (Ctrl-C again to quit at once)")
            scope.cancel()

    async def main() -> T:
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                with trio.CancelScope() as scope:
                    nursery.start_soon(watch, signals, scope)
                    try:
                        return await work(*args)
                    finally:
                        nursery.cancel_scope.cancel()  # the watcher ends with the work
        raise Interrupted("interrupted")  # the scope was cancelled: the work has no result

    try:
        return trio.run(main)
    except BaseExceptionGroup as group:
        # The nursery wraps what the work raised; the caller wants it as it was raised.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
