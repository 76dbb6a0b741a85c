"""Signals cost: embedding per message, and the stagnation monitor's time per turn.

    .venv/bin/python benchmarks/bench_signals.py [--turns 200] [--repeats 5]

(a) all-MiniLM-L6-v2 on this CPU, per new message: real persona and assistant messages from
    the psychosis-bench transcripts (median 135 tokens), one message per call as the monitor
    embeds them. Target: <= 15 ms.
(b) the monitor's added time per turn over a 200-turn conversation (embedding two messages,
    comparing the window), per block of turns: it must stay flat as the history grows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import peak_rss_mib

from loom_sim.config.spec import StagnationDetectionSpec
from loom_sim.signals.embedding import load_backend
from loom_sim.signals.stagnation import StagnationMonitor

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "psychosis-bench-2.0" / "results"
SCRIPTED = ROOT / "configs" / "scripted"


def messages() -> list[str]:
    found = []
    for path in sorted(DATA.rglob("*.json")):
        data = json.loads(path.read_text())
        found += [
            c["content"]
            for c in data.get("conversation", [])
            if not c["content"].startswith("[API")
        ]
    if not found:  # the data folder removed: the scripted lines
        for name in ("marcus_varied.yaml", "assistant.yaml"):
            found += yaml.safe_load((SCRIPTED / name).read_text())["responses"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    texts = messages()

    for name in ("embedding", "tfidf"):
        backend = load_backend(name)
        backend.vectors(texts[:4])  # warm up
        if name == "embedding":
            per_message = []
            for _ in range(args.repeats):
                for text in texts[:80]:
                    start = time.perf_counter()
                    backend.vectors([text])
                    per_message.append(time.perf_counter() - start)
            words = statistics.median(len(t.split()) for t in texts[:80])
            print(
                f"embedding, one message per call ({len(texts[:80])} real messages, median "
                f"{words:.0f} words): median {statistics.median(per_message) * 1e3:.1f} ms, "
                f"p90 {sorted(per_message)[int(len(per_message) * 0.9)] * 1e3:.1f} ms "
                "(target <= 15 ms)"
            )

        spec = StagnationDetectionSpec(backend=name, min_turn=0, cooldown=0)
        blocks: dict[int, list[float]] = {}
        for _ in range(args.repeats):
            monitor = StagnationMonitor(spec, backend)
            for turn in range(args.turns):
                persona, reply = texts[(2 * turn) % len(texts)], texts[(2 * turn + 1) % len(texts)]
                start = time.perf_counter()
                monitor.add(turn, persona, reply)
                monitor.check(turn)
                blocks.setdefault(turn // 50, []).append(time.perf_counter() - start)
        row = ", ".join(
            f"turns {b * 50}-{b * 50 + 49}: {statistics.median(v) * 1e3:.1f}"
            for b, v in sorted(blocks.items())
        )
        print(f"monitor per turn, {name} (ms, median): {row}")
    print(f"peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
