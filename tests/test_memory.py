"""Freed memory handed back to the system (loom_sim.core.memory)."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys

import pytest

glibc = sys.platform.startswith("linux") and ctypes.util.find_library("c") is not None

# In a process of its own: it sets malloc's map threshold, which would stay set.
FREED_MID_HEAP = """
import ctypes, ctypes.util
from loom_sim.core.memory import give_back

def resident_kib():
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
assert libc.mallopt(-3, 16 << 20) == 1  # M_MMAP_THRESHOLD: 1 MiB blocks come from the heap
blocks = [libc.malloc(1 << 20) for _ in range(101)]
for block in blocks:
    ctypes.memset(block, 1, 1 << 20)  # touched: resident
pin = blocks.pop()  # the last, above the rest: the heap's top cannot come down
for block in blocks:
    libc.free(block)
before = resident_kib()
assert give_back()
print(before - resident_kib())
"""


@pytest.mark.skipif(not glibc, reason="malloc_trim is glibc's")
def test_memory_freed_mid_heap_leaves_the_process_when_given_back():
    """100 MiB freed below a live block stay resident until give_back returns them."""
    done = subprocess.run(
        [sys.executable, "-c", FREED_MID_HEAP], capture_output=True, text=True, check=True
    )
    assert int(done.stdout) > 90 * 1024  # KiB: most of the 100 MiB went back
