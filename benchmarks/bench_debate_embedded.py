"""Debates on the embedded model: how many turns fail their own checks, per shipped deck.

    .venv/bin/python benchmarks/bench_debate_embedded.py [--deck NAME ...] [--seeds 1,2,3]
        [--messages 12] [--loom-sim PATH]

Runs ``loom-sim debate DECK --messages N --seed S --model cheap=local/smollm2 --model
strong=local/smollm2`` for each deck (default: every shipped deck) and seed: every role on the
embedded model, whatever models the deck names (the planted decks name scripted ones), and reads
each debate's ``summary.json``: messages said, turns failed (a turn whose every draft failed its
checks), crux rooms, and the wall time. Prints per deck the median over seeds, then the total.
``--loom-sim`` runs another installation's command (an older checkout's ``.venv/bin/loom-sim``)
for a before/after table.

Failed turns do not depend on the machine's load (the random seeds fix every draw); wall times do.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EMBEDDED = "local/smollm2"
DECKS = sorted(p.stem for p in (ROOT / "configs" / "decks").glob("*.yaml"))


def one(loom_sim: str, deck: str, seed: int, messages: int, out: Path) -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [loom_sim, "debate", deck, "-n", str(messages), "--seed", str(seed), "-o", str(out)]
        + [arg for tier in ("cheap", "strong") for arg in ("--model", f"{tier}={EMBEDDED}")],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{deck} seed {seed}: loom-sim debate exited {done.returncode}: {done.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    return {
        "said": summary["said"],
        "failed": summary["failed"],
        "rooms": summary["rooms"],
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deck", action="append", choices=DECKS, help="default: every deck")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--messages", type=int, default=12)
    parser.add_argument("--loom-sim", default=str(Path(sys.executable).parent / "loom-sim"))
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    decks = args.deck or DECKS
    print(f"{args.messages} messages per debate, seeds {seeds}, command {args.loom_sim}")
    print(f"{'deck':<22} {'failed':>7} {'said':>5} {'rooms':>6} {'wall s':>7}   per seed (failed)")
    totals: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for deck in decks:
            runs = [
                one(args.loom_sim, deck, seed, args.messages, Path(tmp) / f"{deck}-{seed}")
                for seed in seeds
            ]

            def mid(key: str, runs: list[dict[str, float]] = runs) -> float:
                return statistics.median(r[key] for r in runs)

            totals.append(mid("failed"))
            each = " ".join(str(int(r["failed"])) for r in runs)
            print(
                f"{deck:<22} {mid('failed'):>7g} {mid('said'):>5g} {mid('rooms'):>6g} "
                f"{mid('wall_s'):>7.1f}   {each}"
            )
    worst = max(totals)
    print(f"failed turns per debate (median over seeds): total {sum(totals):g}, worst {worst:g}")


if __name__ == "__main__":
    main()
