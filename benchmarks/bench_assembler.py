"""Config loading and prompt assembly speed, and peak memory.

    .venv/bin/python benchmarks/bench_assembler.py [--repeats 7]

Prints the median of several runs for: loading + validating the reference config, and
assembling every turn's plan (phase, intensities, injection, three prompt blocks) for 50,
200 and 1000 turns. Assembly runs once per persona turn in a rollout, so its cost per turn
is the figure that matters.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc
from pathlib import Path

from loom_sim.assembler import Assembler
from loom_sim.config import load_config

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "examples" / "mania_patient.yaml"


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    load = median_seconds(lambda: load_config(CONFIG), args.repeats)
    print(f"load + validate {CONFIG.name}: {load * 1e3:.2f} ms (median of {args.repeats})")

    config = load_config(CONFIG)
    for turns in (50, 200, 1000):
        total = median_seconds(lambda n=turns: list(Assembler(config, n).plans()), args.repeats)
        per_turn = total / turns * 1e6
        print(f"assemble {turns:>4} turns: {total * 1e3:8.1f} ms, {per_turn:7.1f} µs per turn")

    tracemalloc.start()
    plans = list(Assembler(config, 1000).plans())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"python heap peak while holding 1000 plans: {peak / 2**20:.1f} MiB ({len(plans)} plans)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {rss:.1f} MiB")


if __name__ == "__main__":
    main()
