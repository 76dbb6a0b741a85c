"""Freed memory handed back to the system when a large part of it has just been freed.

glibc's ``malloc`` keeps the memory a program frees for its next allocations, and returns to
the system only the free space at the top of its heap. A run of the embedded model frees large
blocks in the middle of it: a slot's context when it grows or when a phase is done with it, a
kept prompt state when the budget drops it, its copies when a state is restored. Measured on
the README's job, the heap held 160-240 MiB of such free space at its peak — a fifth of the
process's resident memory, counted against the user's machine for nothing.

:func:`give_back` asks glibc to return every free page (``malloc_trim(0)``, which since glibc
2.8 releases free pages anywhere in every arena, not only at the top). It is called where a
large block was just freed, a few times a run, not on every allocation: fixing malloc's
thresholds instead (every block over 1 MiB its own map) cut about as much but made each call
to the model slower (each such block mapped and faulted in anew). Elsewhere than glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

__all__ = ["give_back"]


@functools.cache
def _trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to call
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the C heap's free pages to the system; whether any were (False where the C
    library has no ``malloc_trim``)."""
    trim = _trim()
    return bool(trim(0)) if trim is not None else False
