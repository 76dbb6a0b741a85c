"""Scale: rollouts per minute, in one process and on Ray, against a fake OpenAI server.

    .venv/bin/python benchmarks/bench_scale.py [--rollouts 8] [--turns 5] [--repeats 3]

R rollouts x T turns, two calls per turn (persona, target), 100 ms per call: one rollout
takes T x 2 x 100 ms of waiting however it is run. Measured:

* the local executor with 1 and 2 rollouts at once (``--concurrency``);
* the Ray executor on a Ray started here with 1 and 2 CPUs, each rollout a task reserving one
  CPU (``--cpus-per-cell 1``): 1 and 2 worker processes, 1 and 2 rollouts at once;
* Ray's fixed overhead per rollout: a rollout's time on Ray with one worker minus its time
  locally one at a time (the task's scheduling, its ``trio.run``, reading the run from disk,
  a model hub of its own, the coordinator's round trips and one limits round trip per call);
* the resident memory of Ray's worker processes.

Workers are warmed up (one batch) before measuring: a new worker imports loom-sim once. The
machine's load average is printed with the figures, since Ray's start-up and scheduling suffer
most from a busy machine.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, measure, median

from loom_sim.executors import CellBatch, ExecutorSettings
from loom_sim.executors.local import LocalExecutor
from loom_sim.executors.ray_executor import RayExecutor
from loom_sim.rollout.runtime.cells import plan_cells
from loom_sim.rollout.runtime.progress import NullProgress
from loom_sim.rollout.runtime.run import RunOptions, make_hub, plan_run, write_plan
from loom_sim.testing.fake_server import FakeOpenAIServer

LATENCY = 0.1

# A persona whose run makes exactly two calls per turn: no monitors to re-prompt, no triggers.
BENCH_CONFIG = """
schema_version: "0.1.0"
persona:
  identity: {name: Bench}
  speech_patterns: ["Short sentences"]
trajectory:
  expected_turns: 10
  dimensions:
    tension: {curve: linear, start_value: 0.1, end_value: 0.8}
  phases:
    - {name: only, end_condition: {type: pct, value: 1.0}}
interaction:
  repetition_detection: {enabled: false}
  stagnation_detection: {enabled: false}
"""


def one_run(executor, config: Path, base_url: str, rollouts: int, turns: int, at_once: int):
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        plan = plan_run(
            config,
            RunOptions(
                turns=turns,
                rollouts=rollouts,
                seed=1,
                persona_model="openai/bench",
                target="openai/bench",
                base_url=base_url,
                output=Path(tmp) / "run",
                concurrency=at_once,
            ),
        )
        write_plan(plan)
        batch = CellBatch(
            plan_cells(plan), make_hub(plan), plan.record.budgets, at_once, plan.dir, base_url
        )
        transcripts = executor.run_cells(batch, NullProgress())
        bad = [t for t in transcripts if t.status != "done" or len(t.turns) != turns]
        assert not bad, bad[0].error


FIXED_ROLLOUTS = 20


def fixed_ms(executor, config: Path, repeats: int) -> float:
    """Milliseconds per rollout of one turn against scripted models (no waiting at all), one
    rollout at a time: what running a rollout costs besides its model calls."""

    def go() -> None:
        with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
            plan = plan_run(
                config,
                RunOptions(
                    turns=1,
                    rollouts=FIXED_ROLLOUTS,
                    seed=1,
                    persona_model="scripted/varied",
                    target="scripted/echo",
                    output=Path(tmp) / "run",
                    concurrency=1,
                ),
            )
            write_plan(plan)
            batch = CellBatch(plan_cells(plan), make_hub(plan), plan.record.budgets, 1, plan.dir)
            executor.run_cells(batch, NullProgress())

    go()  # warm up
    return median([measure(go) for _ in range(repeats)]).wall_s / FIXED_ROLLOUTS * 1e3


def worker_rss_mib() -> list[float]:
    """Resident memory of each Ray worker process on this machine."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if not cmdline.startswith(b"ray::"):  # a worker names itself by its task
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    found.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ideal = args.turns * 2 * LATENCY
    print(
        f"{args.rollouts} rollouts x {args.turns} turns, 2 calls per turn, "
        f"{LATENCY * 1e3:.0f} ms per call (a rollout waits {ideal:.1f} s); "
        f"median of {args.repeats}; load average {_load()} at the start"
    )
    print(f"{'executor':<22} {'wall s':>8} {'rollouts/min':>13} {'s per rollout':>14}")
    per_rollout: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(dir=RESULTS) as tmp,
        FakeOpenAIServer(latency=LATENCY) as server,
    ):
        config = Path(tmp) / "bench.yaml"
        config.write_text(BENCH_CONFIG)

        def report(name: str, executor, at_once: int) -> None:
            def go() -> None:
                one_run(executor, config, server.base_url, args.rollouts, args.turns, at_once)

            go()  # warm up
            result = median([measure(go) for _ in range(args.repeats)])
            per_rollout[name] = result.wall_s / args.rollouts * at_once
            print(
                f"{name:<22} {result.wall_s:8.2f} {args.rollouts / result.wall_s * 60:13.1f} "
                f"{per_rollout[name]:14.3f}"
            )

        for at_once in (1, 2):
            report(f"local, {at_once} at once", LocalExecutor(), at_once)
        import ray

        memory = []
        for workers in (1, 2):
            ray.init(
                num_cpus=workers,
                object_store_memory=80 * 1024**2,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
            try:
                with RayExecutor(ExecutorSettings(cpus_per_cell=1)) as executor:
                    report(f"ray, {workers} worker{'s' if workers > 1 else ''}", executor, workers)
                    memory = worker_rss_mib()
                    if workers == 1:
                        fixed = (
                            fixed_ms(LocalExecutor(), config, args.repeats),
                            fixed_ms(executor, config, args.repeats),
                        )
            finally:
                ray.shutdown()
    overhead = per_rollout["ray, 1 worker"] - per_rollout["local, 1 at once"]
    print(f"Ray's overhead per rollout, from the figures above: {overhead * 1e3:.0f} ms")
    local_ms, ray_ms = fixed
    print(
        f"Ray's fixed overhead per rollout, measured alone ({FIXED_ROLLOUTS} one-turn rollouts "
        f"of scripted models, one at a time): {ray_ms - local_ms:.0f} ms "
        f"(local {local_ms:.0f} ms, Ray {ray_ms:.0f} ms per rollout)"
    )
    if memory:
        print(
            f"Ray worker processes: {len(memory)}, resident memory "
            f"{min(memory):.0f}-{max(memory):.0f} MiB each"
        )
    print(f"load average at the end: {_load()}")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
