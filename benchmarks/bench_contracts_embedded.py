"""``contracts build`` on the embedded model: which of the nine steps get a usable answer, in
how many tries, and how long the build takes.

    .venv/bin/python benchmarks/bench_contracts_embedded.py [--runs 3] [--loom-sim PATH]

Copies the shipped example (``configs/examples/contracts-build``) into a fresh folder for each
run and builds it with every role on the embedded model (``--model strong=local/smollm2
--model cheap=local/smollm2``). Then reads each persona's saved steps
(``<output>/.build/<persona>/<n>-<step>.json``): a step with a file got a usable answer, in the
tries it records; the first step without one is the step the build stopped at (``failed``),
and the steps after it, this persona's and the next ones', were never asked (``-``). Prints
the steps per persona (the same in every run: the random seeds are fixed), and the build's
wall time, median of the runs.
``--loom-sim`` runs another installation's command (an older checkout's ``.venv/bin/loom-sim``)
for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "configs" / "examples" / "contracts-build"
CONFIG = "quayside-build.yaml"
PERSONAS = ("mara-lindqvist", "tobias-okoro")
STEPS = (
    "relevance", "personality", "bias", "stakes", "epistemology", "time_horizon",
    "flip_conditions", "evidence_policy", "anchors",
)  # fmt: skip
EMBEDDED = ["--model", "strong=local/smollm2", "--model", "cheap=local/smollm2"]


def one(loom_sim: str, folder: Path) -> tuple[float, int, dict[str, list[str]]]:
    shutil.copytree(EXAMPLE, folder)
    started = time.perf_counter()
    done = subprocess.run(
        [loom_sim, "contracts", "build", str(folder / CONFIG), *EMBEDDED],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    steps: dict[str, list[str]] = {}
    stopped = False  # the personas are built in order: after the failed step, none is asked
    for persona in PERSONAS:
        state = folder / "decks" / "quayside" / ".build" / persona
        row: list[str] = []
        for n, name in enumerate(STEPS):
            saved = state / f"{n}-{name}.json"
            if saved.exists():
                row.append(str(json.loads(saved.read_text())["attempts"]))
            elif stopped:
                row.append("-")
            else:
                row.append("failed")
                stopped = True
        steps[persona] = row
    return wall, done.returncode, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--loom-sim", default=str(Path(sys.executable).parent / "loom-sim"))
    args = parser.parse_args()
    print(f"contracts build of the shipped example, every role embedded, command {args.loom_sim}")
    walls: list[float] = []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            wall, code, steps = one(args.loom_sim, Path(tmp) / f"run{run}")
            walls.append(wall)
            results.append((code, steps))
    code, steps = results[0]
    same = all(r == results[0] for r in results)
    print(f"{'persona':<16} " + " ".join(f"{s[:9]:>9}" for s in STEPS))
    for persona, row in steps.items():
        print(f"{persona:<16} " + " ".join(f"{cell:>9}" for cell in row))
    print("cells: tries until a usable answer; failed: the step the build stopped at")
    built = "built" if code == 0 else f"stopped (exit {code})"
    print(
        f"build {built}; wall {statistics.median(walls):.1f} s median of {len(walls)} "
        f"({', '.join(f'{w:.1f}' for w in walls)}); steps the same in every run: {same}"
    )


if __name__ == "__main__":
    main()
