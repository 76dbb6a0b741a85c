"""The harness's own cost per turn: scripted models that answer instantly, so what a turn costs
is loom-sim itself — the four actors' messages, the machine, the audit, the target adapter,
the evaluator's counting, the commit and the views — plus the target.

    .venv/bin/python benchmarks/bench_harness.py [--turns 20] [--repeats 5]

Two targets: ``model:scripted/echo`` (no process: the harness alone) and the studio with
canned replies over a real pseudo-terminal (a program doing real image work on each command).
Each figure is the median of ``--repeats`` sessions of ``--turns`` turns, wall and CPU ms per
turn (CPU: this process only; the studio's own work is in another process).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, measure, median, peak_rss_mib

from loom_sim.harness.packs import ArtifactsCriterion, LoadedPack, load_pack
from loom_sim.harness.plan import HarnessOptions, plan_run
from loom_sim.harness.run import execute
from loom_sim.models.hub import ModelHub
from loom_sim.resources import find

MODELS = {
    "user": "scripted/harness-user",
    "reflector": "scripted/harness-reflector",
    "evaluator": "scripted/harness-evaluator",
}


class Quiet:
    def session_started(self, *args: object) -> None: ...

    def turn_done(self, *args: object) -> None: ...

    def session_ended(self, *args: object) -> None: ...


def one_session(target: str, turns: int) -> int:
    """One session of ``turns`` turns (its one criterion is out of reach, so only the turn
    limit stops it); the turns it ran."""
    loaded = load_pack(find("studio_benchmarks", "packs"))
    scenario = loaded.pack.scenarios[0]
    never = ArtifactsCriterion(id="never", type="artifacts", min=10_000)
    budget = scenario.budget.model_copy(
        update={"max_turns": turns, "max_consecutive_failures": 1000, "max_cost_usd": None}
    )
    scenario = scenario.model_copy(update={"budget": budget, "success_criteria": [never]})
    pack = loaded.pack.model_copy(update={"scenarios": [scenario]})
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        plan = plan_run(
            LoadedPack(pack, loaded.path, loaded.name),
            HarnessOptions(target=target, seed=1, models=MODELS, output=Path(tmp) / "run"),
            argv=[],
        )

        async def run() -> list[dict]:
            async with ModelHub() as hub:
                return await execute(plan, hub.client, Quiet())

        [brief] = trio.run(run)
        return brief["turns"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = {}
    for target in ("model:scripted/echo", "studio-canned"):
        one_session(target, 2)  # warm: imports, the first process start
        samples = [
            measure(lambda t=target: one_session(t, args.turns)) for _ in range(args.repeats)
        ]
        m = median(samples)
        row = rows[target] = {
            "wall_ms_per_turn": round(1000 * m.wall_s / args.turns, 2),
            "cpu_ms_per_turn": round(1000 * m.cpu_s / args.turns, 2),
        }
        print(
            f"{target:22} {row['wall_ms_per_turn']:8.2f} ms wall/turn "
            f"{row['cpu_ms_per_turn']:8.2f} ms cpu/turn"
        )
    print(f"peak RSS {peak_rss_mib():.0f} MiB")
    print(json.dumps({"turns": args.turns, "repeats": args.repeats, **rows}))


if __name__ == "__main__":
    main()
