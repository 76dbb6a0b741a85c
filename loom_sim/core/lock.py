"""One writer per folder: an OS lock on a run's folder, held while a command writes it.

Two processes writing one run folder interleave their turns (0, 0, 1, 1, ...) and both report
success; a ``--resume`` started while the run still goes duplicates turns. So every command
that writes a folder (``run``, ``run --resume``, ``score``, ``harness run``, ``debate``,
``merge``) holds that folder's lock for as long as it runs, and a second one is refused in
one line naming the process that holds it, before it touches anything.

Why an OS lock on a file inside the folder (:data:`LOCK_FILE`) rather than a "pid file": the
kernel releases it when the process ends, however it ends (Ctrl-C, ``kill -9``, out of
memory, the machine rebooting), so there is never a stale lock to clean by hand. The file
itself means nothing once nobody holds its lock, and it is never deleted: deleting it while
another process is about to lock it would let two processes lock two different files of the
same name.

Why a POSIX record lock (``fcntl.lockf``) rather than ``flock``: the kernel can be asked who
holds it (``F_GETLK``) without taking it, and answers with the holder's pid. ``runs`` and
``serve`` look at folders constantly; a look that took the lock even for an instant could
refuse a run that starts at that instant, and a pid written into the file after locking
would be missing or stale at the moment someone reads it. A record lock belongs to the
process, not to a descriptor, which asks for two cares taken here: a folder this process
already holds is not locked again but nested (``run`` scores what it ran), and its lock file
is never opened a second time by this process (closing any descriptor of a file drops the
process's locks on it). Children do not inherit it: a program the harness starts cannot keep
a folder locked after loom-sim has gone.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loom_sim.errors import LoomError

__all__ = ["LOCK_FILE", "FolderInUse", "hold", "holder", "refuse_if_held"]

LOCK_FILE = ".loom-sim.lock"

# What a file system without record locks answers (some network mounts): said, not fatal.
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})
_log = logging.getLogger("loom_sim")


class FolderInUse(LoomError):
    """Another process holds the folder's lock: what the second writer is told."""

    def __init__(self, folder: Path, pid: int | None) -> None:
        who = f"loom-sim process {pid}" if pid is not None else "another loom-sim process"
        super().__init__(
            f"{folder} is in use by {who}: one process writes a run folder at a time; "
            "wait for it to end, or stop it first"
        )
        self.folder = folder
        self.pid = pid


class _LinuxFlock(ctypes.Structure):  # struct flock, as glibc and musl lay it out
    _fields_ = (
        ("l_type", ctypes.c_short),
        ("l_whence", ctypes.c_short),
        ("l_start", ctypes.c_int64),
        ("l_len", ctypes.c_int64),
        ("l_pid", ctypes.c_int32),
    )


class _BSDFlock(ctypes.Structure):  # struct flock on macOS and the BSDs
    _fields_ = (
        ("l_start", ctypes.c_int64),
        ("l_len", ctypes.c_int64),
        ("l_pid", ctypes.c_int32),
        ("l_type", ctypes.c_short),
        ("l_whence", ctypes.c_short),
    )


_Flock = _LinuxFlock if sys.platform.startswith("linux") else _BSDFlock


@dataclass
class _Held:
    fd: int
    depth: int  # nested holds of the same folder by this process


_held: dict[tuple[int, int], _Held] = {}  # by the lock file's (device, inode)
_guard = threading.Lock()  # _held, and every open of a lock file, one thread at a time


def _key(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _holder_of(fd: int) -> int | None:
    """The pid holding a lock on the file behind ``fd`` (None: nobody), asked of the kernel
    without taking the lock."""
    query = _Flock(l_type=fcntl.F_WRLCK, l_whence=os.SEEK_SET, l_start=0, l_len=0, l_pid=0)
    answer = _Flock.from_buffer_copy(fcntl.fcntl(fd, fcntl.F_GETLK, bytes(query)))
    return None if answer.l_type == fcntl.F_UNLCK else int(answer.l_pid)


def holder(folder: Path) -> int | None:
    """The pid of the process holding ``folder``'s lock, or None when nobody does. Only asks:
    the lock is not taken, and nothing in the folder is created or changed."""
    path = folder / LOCK_FILE
    with _guard:
        try:
            if _key(os.stat(path)) in _held:
                return os.getpid()
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # no lock file (never locked), or one that cannot be read
            return None
        try:
            return _holder_of(fd)
        except OSError:  # a file system without record locks: nobody can hold one there
            return None
        finally:
            os.close(fd)


def refuse_if_held(folder: Path) -> None:
    """Raise :class:`FolderInUse` when another process holds ``folder``'s lock."""
    pid = holder(folder)
    if pid is not None and pid != os.getpid():
        raise FolderInUse(folder, pid)


def _acquire(folder: Path) -> tuple[int, int]:
    path = folder / LOCK_FILE
    with _guard:
        try:
            held = _held.get(_key(os.stat(path)))
        except OSError:
            held = None
        if held is not None:
            held.depth += 1
            return _key(os.fstat(held.fd))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            reason = (err.strerror or str(err)).lower()
            raise LoomError(
                f"cannot write {folder}: {reason} (its lock file {LOCK_FILE} cannot be created)"
            ) from None
        for _ in range(3):  # a holder that ends between the two calls: try again
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as err:
                if err.errno in _NO_LOCKS:  # refusing would make the folder unusable
                    _log.warning(
                        "note: %s cannot be locked on this file system (%s); nothing stops a "
                        "second loom-sim from writing it at the same time",
                        folder,
                        err.strerror,
                    )
                    break
                if err.errno not in (errno.EACCES, errno.EAGAIN):
                    os.close(fd)
                    raise LoomError(f"{folder}: cannot lock {LOCK_FILE} ({err.strerror})") from None
                pid = _holder_of(fd)
                if pid is not None:
                    os.close(fd)
                    raise FolderInUse(folder, pid) from None
        else:
            os.close(fd)
            raise FolderInUse(folder, None)
        key = _key(os.fstat(fd))
        _held[key] = _Held(fd, 1)
        return key


def _release(key: tuple[int, int]) -> None:
    with _guard:
        held = _held[key]
        held.depth -= 1
        if held.depth == 0:
            del _held[key]
            os.close(held.fd)  # closing the descriptor releases the lock


@contextmanager
def hold(folder: Path) -> Iterator[Path]:
    """Hold ``folder``'s lock for the ``with`` block (making the folder if it does not exist
    yet). Another process holding it raises :class:`FolderInUse` naming its pid; the folder
    is left as it was. Held already by this process, the hold nests."""
    key = _acquire(folder)
    try:
        yield folder
    finally:
        _release(key)
