"""The C allocator's settings for a long run: freed memory goes back to the system.

glibc's ``malloc`` serves a large block from a memory map, then raises its threshold for
maps to the size of the last one freed (up to 32 MiB): after the first kept prompt state or
judge prompt is freed, blocks of that size come from the heap instead, and freed heap memory
between live blocks stays with the process. In a run that makes and frees tens of such
blocks (llama.cpp states, tokenised prompts, ONNX Runtime's buffers), the peak resident memory
of the README's job was ~30 MiB higher with the moving threshold than with a fixed one
(measured with ``benchmarks/bench_memory.py``).

:func:`tune` fixes the thresholds once per process (``mallopt``); elsewhere than glibc it
does nothing. ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` set in the
environment win: a user who tuned them keeps theirs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

__all__ = ["tune"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 20  # blocks of 1 MiB and more are maps, returned when freed
TRIM_THRESHOLD = 4 << 20  # free heap at the top beyond 4 MiB is returned


@functools.cache
def tune() -> bool:
    """Fix glibc's map and trim thresholds for this process; whether it did."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1)
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1) and ok
