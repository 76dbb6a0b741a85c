"""The README's job, timed: ``loom-sim run configs/examples/mania_patient.yaml --turns 12``.

    .venv/bin/python benchmarks/bench_readme_job.py [--seeds 1 2 3] [--loom-sim PATH]

Runs the job once per seed, each in its own process with no response cache (``--no-cache``:
every reply is the model's), and prints each run's wall time, the rollout's share (from its
last progress line) and the scoring's, then the medians and the peak memory of a run.
``--loom-sim`` runs another checkout's command (a clone of an earlier commit, set up with its
``scripts/setup``), for before/after figures on the same seeds.

The embedded model's replies depend on the seed, and so does how often a persona draft is
re-prompted or its history cut: compare the same seeds, on a quiet machine (the load average
is printed with the figures).

Figures (2-core machine, quiet, load average 1.8-1.9, seeds 1-5). Before: 737dcc1. After:
the persona's slot keeps the prompt states it leaves (models/llama_states.py) and a JSON
answer's values are sampled checking the chosen token first (models/llama_sampling.py):

Seconds, the job (rollout + the rest); peak RSS of a run:

| seed | before | after |
| --- | --- | --- |
| 1 | 148.6 (85.0 + 63.6) | 141.4 (87.8 + 53.6) |
| 2 | 128.4 (66.1 + 62.3) | 128.7 (77.8 + 50.9) |
| 3 | 126.6 (74.9 + 51.7) | 103.4 (63.9 + 39.5) |
| median of 1-3 | 128.4 (74.9 + 62.3) | 128.7 (77.8 + 50.9) |
| 4 | 130.6 (72.4 + 58.0) | 114.8 (67.0 + 47.8) |
| 5 | 124.0 (74.2 + 49.8) | 114.2 (70.2 + 44.0) |
| median of 1-5 | 128.4 (74.2 + 58.0) | 114.8 (70.2 + 47.8) |
| peak RSS | 1,956-2,004 MiB | 2,486-2,487 MiB |

Scoring's median fell 62.3 -> 50.9 s (seeds 1-3), 58.0 -> 47.8 s (seeds 1-5). The rollouts
are not the same conversations before and after: the monitor asks the judge to confirm a
revelation, and that answer's draw changed, so a re-prompt or a history cut can fall elsewhere;
the rollout's time follows them (64-88 s).
The peak memory holds the persona's kept states (at most 512 MB).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from _common import RESULTS

ROOT = Path(__file__).resolve().parent.parent
ROLLOUT_DONE = re.compile(r"turn (\d+)/\1 .*· ([0-9.]+)s$", re.MULTILINE)


def run_once(loom_sim: str, seed: int) -> tuple[float, float | None]:
    out = RESULTS / f"bench-readme-job-{seed}"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run(
        [loom_sim, "run", "configs/examples/mania_patient.yaml", "--turns", "12",
         "--seed", str(seed), "--no-cache", "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"seed {seed}: loom-sim exited {done.returncode}:\n{done.stderr[-2000:]}")
    rollout = ROLLOUT_DONE.findall(done.stderr + done.stdout)
    shutil.rmtree(out, ignore_errors=True)
    return wall, float(rollout[-1][1]) if rollout else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--loom-sim", default=str(ROOT / ".venv" / "bin" / "loom-sim"))
    args = parser.parse_args()
    walls, rollouts, scorings, loads = [], [], [], []
    for seed in args.seeds:
        wall, rollout = run_once(args.loom_sim, seed)
        loads.append(os.getloadavg()[0])
        walls.append(wall)
        line = f"seed {seed}: {wall:.1f} s"
        if rollout is not None:
            rollouts.append(rollout)
            scorings.append(wall - rollout)
            line += f" (rollout {rollout:.1f} s, the rest {wall - rollout:.1f} s)"
        print(line, flush=True)
    print(f"{args.loom_sim}, seeds {' '.join(map(str, args.seeds))}:")
    print(f"  README job median {statistics.median(walls):.1f} s", end="")
    if rollouts:
        print(
            f" (rollout {statistics.median(rollouts):.1f} s, "
            f"scoring and start-up {statistics.median(scorings):.1f} s)",
            end="",
        )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"; peak RSS of a run {peak:.0f} MiB; load average {statistics.median(loads):.1f}")


if __name__ == "__main__":
    main()
