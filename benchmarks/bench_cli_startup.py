"""How long a person waits for ``loom-sim --help`` and ``loom-sim validate``: wall clock and
CPU time of the real command (a new process each time), median of several runs.

    .venv/bin/python benchmarks/bench_cli_startup.py [--runs 15]

CPU time (user + system of the child) is the steadier figure on a shared machine; wall clock
is what a person sees on a quiet one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
COMMANDS = {
    "--help": ["--help"],
    "--version": ["--version"],
    "validate mania_patient": ["validate", str(ROOT / "configs/examples/mania_patient.yaml")],
    "dry-run --help": ["dry-run", "--help"],
}


def once(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([str(LOOM_SIM), *args], capture_output=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    print(f"median of {runs} runs · load average {os.getloadavg()[0]:.1f}")
    for name, args in COMMANDS.items():
        once(args)  # warm the file cache and the bytecode
        samples = [once(args) for _ in range(runs)]
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"{name:<24} wall {wall * 1000:6.0f} ms   cpu {cpu * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
