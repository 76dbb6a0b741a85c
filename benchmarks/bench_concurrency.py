"""Concurrency: K rollouts x 10 turns against a fake OpenAI server with 100 ms latency.

    .venv/bin/python benchmarks/bench_concurrency.py [--k 1,16,64,256] [--repeats 3]

Each turn makes two model calls (persona, interlocutor), so the ideal wall time is
10 turns x 2 calls x 100 ms = 2 s whatever K is; the figure is ideal / measured. The fake
server runs in its own process; CPU per call is this process's CPU time over the calls it made.
Targets: >= 85% of ideal at K = 64 and >= 50% at K = 256, in one process.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, measure, median, peak_rss_mib

from loom_sim.runtime.progress import NullProgress
from loom_sim.runtime.run import RunOptions, execute, make_hub, plan_run, write_plan
from loom_sim.testing.fake_openai import FakeOpenAIServer

TURNS = 10
LATENCY = 0.1
IDEAL_S = TURNS * 2 * LATENCY

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


def served(server: FakeOpenAIServer) -> int:
    with urllib.request.urlopen(server.url + "/stats") as response:
        return int(json.load(response)["requests"])


def one_run(config: Path, base_url: str, k: int) -> None:
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        plan = plan_run(
            config,
            RunOptions(
                turns=TURNS,
                rollouts=k,
                seed=1,
                persona_model="openai/bench",
                target="openai/bench",
                base_url=base_url,
                output=Path(tmp) / "run",
                concurrency=k,
            ),
        )
        hub = make_hub(plan)
        write_plan(plan)
        transcripts = trio.run(execute, plan, hub, NullProgress())
        bad = [t for t in transcripts if t.status != "done" or len(t.turns) != TURNS]
        assert not bad, bad[0].error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", default="1,16,64,256")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(dir=RESULTS) as tmp,
        FakeOpenAIServer(latency=LATENCY) as server,
    ):
        config = Path(tmp) / "bench.yaml"
        config.write_text(BENCH_CONFIG)
        one_run(config, server.base_url, 2)  # warm up
        print(
            f"K rollouts x {TURNS} turns, 2 calls per turn, {LATENCY * 1e3:.0f} ms latency; "
            f"ideal {IDEAL_S:.1f} s; median of {args.repeats}"
        )
        print(f"{'K':>5} {'wall s':>8} {'% ideal':>8} {'CPU ms/call':>12} {'peak RSS MiB':>13}")
        for k in (int(x) for x in args.k.split(",")):
            samples = []
            calls_per_run = 0
            for _ in range(args.repeats):
                before = served(server)
                samples.append(measure(lambda k=k: one_run(config, server.base_url, k)))
                calls_per_run = served(server) - before
            result = median(samples)
            print(
                f"{k:>5} {result.wall_s:8.2f} {IDEAL_S / result.wall_s * 100:7.0f}% "
                f"{result.cpu_s * 1e3 / calls_per_run:12.3f} {peak_rss_mib():13.0f}"
            )


if __name__ == "__main__":
    main()
