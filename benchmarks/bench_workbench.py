"""What the workbench costs: reading a matrix, comparing, exporting, serving a page, and the
response cache's lookups.

    .venv/bin/python benchmarks/bench_workbench.py [--rollouts 10] [--turns 10] [--repeat 5]

Makes a matrix run once (the mania example on TF-IDF, 1 config x 2 scripted targets, scored
by the scripted judge), then prints the median of ``--repeat`` runs of each step (wall and CPU)
and the peak memory. The cache lines time a lookup that hits, one that misses and a store,
against a file of 10 000 replies.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, measure, median, peak_rss_mib

from loom_sim.cli import cli
from loom_sim.compare import build_compare
from loom_sim.compare.html import render_html
from loom_sim.models.base import ChatMessage, ModelRequest, ModelResponse, Usage
from loom_sim.models.cache import ResponseCache, cache_key
from loom_sim.runs.export import rollout_rows, turn_rows, write_rows
from loom_sim.runs.load import load_results
from loom_sim.web.app import create_app

MANIA = Path(__file__).resolve().parent.parent / "configs" / "examples" / "mania_patient.yaml"


def make_matrix(folder: Path, rollouts: int, turns: int) -> Path:
    data = yaml.safe_load(MANIA.read_text())
    data["interaction"]["stagnation_detection"]["backend"] = "tfidf"
    config = folder / "mania_patient.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    out = folder / "matrix"
    result = CliRunner().invoke(
        cli,
        ["run", str(config), "--target", "scripted/varied", "--target", "scripted/paraphrase",
         "--rollouts", str(rollouts), "--turns", str(turns), "--seed", "1",
         "--persona-model", "scripted/varied", "--judge-model", "scripted/judge",
         "-o", str(out), "--no-cache"],
    )  # fmt: skip
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return out


def page(app, url: str) -> None:
    async def get() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
            reply = await client.get(url)
            reply.raise_for_status()

    asyncio.run(get())


def cache_figures(folder: Path, entries: int = 10_000) -> dict[str, float]:
    store = ResponseCache(folder / "bench.sqlite3")
    response = ModelResponse("a reply " * 40, Usage(800, 120, 0.001), "openai/bench")
    keys = []
    for i in range(entries):
        request = ModelRequest([ChatMessage("user", f"question {i} " * 30)], seed=i)
        key = cache_key("openai/bench", request)
        keys.append(key)
    start = time.perf_counter()
    for key in keys:
        store.put(key, "openai/bench", response)
    put = (time.perf_counter() - start) / entries
    start = time.perf_counter()
    for key in keys[:2000]:
        store.get(key)
    hit = (time.perf_counter() - start) / 2000
    start = time.perf_counter()
    for i in range(2000):
        store.get(f"missing-{i}")
    miss = (time.perf_counter() - start) / 2000
    request = ModelRequest([ChatMessage("user", "question " * 600)], seed=1)
    start = time.perf_counter()
    for _ in range(2000):
        cache_key("openai/bench", request)
    key_time = (time.perf_counter() - start) / 2000
    store.close()
    return {"put": put, "hit": hit, "miss": miss, "key (5 kB request)": key_time}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=10)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-workbench-", dir=RESULTS))
    try:
        started = time.perf_counter()
        matrix = make_matrix(folder, args.rollouts, args.turns)
        made = time.perf_counter() - started
        cells = 2 * args.rollouts
        print(
            f"matrix: 1 config x 2 targets x {args.rollouts} rollouts x {args.turns} turns "
            f"({cells} cells, {cells * args.turns} turns), run and scored in {made:.1f}s"
        )
        app = create_app(folder)
        rel = "matrix/mania_patient--scripted-varied/rollout_000"
        steps = {
            "load the run (every cell)": lambda: load_results(matrix),
            "compare (tables, differences, curves)": lambda: build_compare([matrix]),
            "compare as html": lambda: render_html(build_compare([matrix])),
            "export turns + rollouts (csv)": lambda: [
                write_rows(*table([load_results(matrix)]), folder / f"{n}.csv", "csv")
                for n, table in (("turns", turn_rows), ("rollouts", rollout_rows))
            ],
            "viewer: runs page": lambda: page(app, "/"),
            "viewer: the matrix page": lambda: page(app, "/run/matrix"),
            "viewer: a rollout page": lambda: page(app, f"/rollout/{rel}"),
        }
        print(f"{'step':40} {'wall ms':>9} {'cpu ms':>9}   (median of {args.repeat})")
        for name, step in steps.items():
            sample = median([measure(step) for _ in range(args.repeat)])
            print(f"{name:40} {sample.wall_s * 1e3:9.1f} {sample.cpu_s * 1e3:9.1f}")
        for name, seconds in cache_figures(folder).items():
            print(f"cache {name:34} {seconds * 1e6:9.1f} us")
        print(f"peak memory {peak_rss_mib():.0f} MiB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
