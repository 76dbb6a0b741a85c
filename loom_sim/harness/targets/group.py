"""Stopping a program together with everything it started.

A target runs in a session of its own (``start_new_session``), so the program and its
children share one process group. Stopping only the program, or signalling the group only
while the program lives, leaves behind a child that ignores SIGTERM or a program's
grandchild still holding the terminal; so the group is stopped as a whole, SIGKILL after a
grace period, whether or not the program itself has exited.
"""

from __future__ import annotations

import os
import signal

import trio

_GRACE_S = 3.0  # how long the group has to end after SIGTERM, then after SIGKILL


async def stop_group(process: trio.Process, grace_s: float = _GRACE_S) -> None:
    """SIGTERM to the program's process group, SIGKILL after ``grace_s`` to whatever of it
    is left — also when the program itself has exited: its children stay in its group, and
    one that ignores SIGTERM would otherwise outlive the session."""
    group = process.pid  # started with start_new_session: the group is the program's pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_alive(group) and process.returncode is not None:
            break
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            pass
        with trio.move_on_after(grace_s):
            await process.wait()
            while _group_alive(group):
                await trio.sleep(0.05)  # a grandchild has no handle to wait on
    with trio.move_on_after(grace_s):
        await process.wait()


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` is still running (zombies, which no signal reaches and
    which only their parent can reap, do not count)."""
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc: ask the kernel, zombies included
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False
