"""Helpers shared by the benchmarks: medians, CPU time and peak memory."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Runs write where loom-sim writes by default (results/ in the project), not to /tmp: on this
# machine /tmp is an overlay where opening a file costs ~130 us against ~20 us here, and a run
# opens three files per rollout.
RESULTS = Path(__file__).resolve().parent.parent / "results"
RESULTS.mkdir(exist_ok=True)


@dataclass(frozen=True)
class Sample:
    wall_s: float
    cpu_s: float


def measure(fn: Callable[[], object]) -> Sample:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return Sample(time.perf_counter() - wall, time.process_time() - cpu)


def median(samples: list[Sample]) -> Sample:
    return Sample(
        statistics.median(s.wall_s for s in samples), statistics.median(s.cpu_s for s in samples)
    )


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
