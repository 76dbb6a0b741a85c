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

Figures (2-core machine, quiet apart from the job, load average 1.8-2.0). Before: 7a830a5.
After: free prose replies drafted from their own context where they repeat it
(models/llama_drafts.py), prose under a grammar drawn from the grammar's 40 best tokens without
filtering the vocabulary (models/llama_allowed.py; the same replies), and the judge's window
fitted beside what its answer may take rather than the 400 tokens it asks for (the last turns
no longer lose a turn of their window and read the transcript again).

Seconds, the job (rollout + the rest):

| seed | before | after |
| --- | --- | --- |
| 1 | 119.6 (65.8 + 53.8) | 125.1 (63.6 + 61.5) |
| 2 | 130.0 (78.8 + 51.2) | 97.9 (47.0 + 50.9) |
| 3 | 141.1 (88.7 + 52.4) | 86.2 (45.5 + 40.7) |
| median of 1-3 | 130.0 | 97.9 |

The before runs were each alternated with a run of the same seed at an intermediate commit
(cc16379: drafts from matches down to one token; median 107.7 s); the after runs came an hour
later, one after another (a second set: 114.8, 96.6, 97.3 s, median 97.3). Seed 1's
conversation is the longest after the change, and its scoring the slowest (61.5 s). Where the
time goes (seed 1, profiled before the change): model calls fill ~98% of the wall time; the
persona's and interlocutor's replies, at the embedded model's 128-token cap, repeat their
context a great deal, which is where drafts pay.

Later, on a slower 2-core machine (a virtual machine of an AMX Xeon; llama.cpp built without
its AMX kernels, see docs/embedded-models.md), before (e702524) and after the memory work
(kept prompt states one 64 MiB budget per process, one loaded model for every slot, contexts
grown with their prompts, prompts read 128 tokens a batch, freed memory handed back after each
call; benchmarks/bench_memory.py), alternated, seconds and peak RSS (/usr/bin/time):

| seed | before | after |
| --- | --- | --- |
| 1 | 210.2 (92.5 + 117.7), 2,287 MiB | 240.6 (113.3 + 127.3), 949 MiB (*) |
| 2 | 165.2 (76.8 + 88.4), 2,356 MiB | 161.2 (72.5 + 88.7), 939 MiB |
| 3 | 139.8 (77.2 + 62.6), 2,267 MiB | 142.5 (74.3 + 68.2), 921 MiB |
| median of 1-3 | 165.2 | 161.2 |

(*) overlapped a short test run on the same cores; the median is seed 2's whatever its figure.

Earlier (3bd1251 -> 7a830a5, a later full injection sent as an update of the parts that
changed): median of seeds 1-5 130.9 -> 122.8 s.
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
