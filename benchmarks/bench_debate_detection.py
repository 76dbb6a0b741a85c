"""Detection quality on planted cruxes: do rooms open where the disagreement is, and only there?

    .venv/bin/python benchmarks/bench_debate_detection.py [--seeds 3] \
        [--detector scripted|embedded|both] [--similarity embedding|tfidf]

Each shipped planted-crux deck (``configs/decks/planted_*.yaml``) is a scripted debate in which
a known pair disagrees on a known claim of a known type — or, in the ``none`` decks, nobody
disagrees. The debaters stay scripted (so the crux really is in the text); the detector, exit
check and card writer are the scripted stand-ins or the embedded model (``local/smollm2``).
Figures, over every deck and seed:

* **room precision** — rooms whose pair is a planted pair / rooms opened;
* **recall** — planted cruxes that got a room / planted cruxes;
* **detector precision** — corroborated findings naming a planted pair / corroborated findings
  (what the model said, before the spawn rule filtered it);
* **spawn latency** — messages from the crux's onset (both planted personas have stated their
  side of the claim) to the room opening, median and max;
* **card type accuracy** — cards of planted rooms whose type is the planted type, and how many
  rooms got no valid card at all;
* wall time per debate (median) and peak memory.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, peak_rss_mib

from loom_sim.debate.deck import load_deck
from loom_sim.debate.runtime.plan import DebateOptions, plan_debate
from loom_sim.debate.runtime.run import Debate
from loom_sim.models.hub import ModelHub

ROOT = Path(__file__).resolve().parent.parent
DECKS = sorted((ROOT / "configs" / "decks").glob("planted_*.yaml"))
ANALYSTS = {
    "scripted": {
        "detection": "scripted/crux-detector",
        "exit_check": "scripted/crux-exit",
        "card": "scripted/crux-card",
    },
    "embedded": {
        "detection": "local/smollm2",
        "exit_check": "local/smollm2",
        "card": "local/smollm2",
    },
}
_STOP = {"the", "a", "an", "is", "are", "on", "of", "for", "its", "not", "does", "did", "do", "no"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP}


def onset(turns: list[dict], pair: list[str], claim: str) -> int | None:
    """Messages said when both planted personas had stated their side of the claim."""
    wanted, stated, said = words(claim), set(), 0
    for turn in turns:
        if turn["status"] != "said":
            continue
        said += 1
        if turn["speaker"] in pair and len(words(turn["text"]) & wanted) >= 0.6 * len(wanted):
            stated.add(turn["speaker"])
            if stated == set(pair):
                return said
    return None


def one(deck_path: Path, seed: int, analysts: dict[str, str], out: Path, similarity: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    models = {"cheap": "scripted/debater", "strong": "scripted/debater", **analysts}
    plan = plan_debate(
        deck_path, DebateOptions(seed=seed, output=out, models=models, similarity=similarity), []
    )
    plan.files.write_plan(plan.record)
    hub = ModelHub()

    async def main():
        async with hub:
            return await Debate(plan, lambda spec, slot: hub.client(spec, 0, slot)).run()

    started = time.perf_counter()
    summary = trio.run(main)
    wall = time.perf_counter() - started
    turns = [json.loads(x) for x in (out / "messages.jsonl").read_text().splitlines()]
    rounds = [json.loads(x) for x in (out / "detections.jsonl").read_text().splitlines()]
    cards = json.loads((out / "cards.json").read_text()) if (out / "cards.json").exists() else {}
    planted = load_deck(deck_path).planted or []
    return {
        "deck": deck_path.stem,
        "seed": seed,
        "status": summary.status,
        "error": summary.error,
        "wall_s": wall,
        "planted": [
            {"pair": sorted(c.pair), "claim": c.claim, "type": c.type.value} for c in planted
        ],
        "onsets": [onset(turns, sorted(c.pair), c.claim) for c in planted],
        "rooms": [
            {"pair": s["pair"], "after": s["after"], "id": s["id"]}
            for r in rounds
            for s in r["rooms"]
        ],
        "found": [f["pair"] for r in rounds for f in r["found"] if f["corroborated"]],
        "asked": sum(1 for r in rounds if r["asked"]),
        "cards": {c["room"]: c["card"]["type"] for c in cards.get("cards", [])},
        "rejected": [c["room"] for c in cards.get("rejected", [])],
    }


def score(runs: list[dict]) -> dict:
    rooms = [r for run in runs for r in run["rooms"]]
    planted_pairs = {
        (run["deck"], run["seed"]): [p["pair"] for p in run["planted"]] for run in runs
    }
    on_target = [
        r
        for run in runs
        for r in run["rooms"]
        if r["pair"] in planted_pairs[(run["deck"], run["seed"])]
    ]
    cruxes = [(run, k, p) for run in runs for k, p in enumerate(run["planted"])]
    latencies, typed, carded, hit = [], 0, 0, 0
    for run, k, crux in cruxes:
        mine = [r for r in run["rooms"] if r["pair"] == crux["pair"]]
        if not mine:
            continue
        hit += 1
        if run["onsets"][k] is not None:
            latencies.append(mine[0]["after"] - run["onsets"][k])
        card = run["cards"].get(mine[0]["id"])
        if card is not None:
            carded += 1
            typed += card == crux["type"]
    found = [(run, f) for run in runs for f in run["found"]]
    return {
        "debates": len(runs),
        "errors": sum(1 for run in runs if run["status"] != "done"),
        "rooms": len(rooms),
        "room_precision": len(on_target) / len(rooms) if rooms else None,
        "recall": hit / len(cruxes) if cruxes else None,
        "detector_precision": (
            sum(1 for run, f in found if f in planted_pairs[(run["deck"], run["seed"])])
            / len(found)
            if found
            else None
        ),
        "rounds_asked": sum(run["asked"] for run in runs),
        "spawn_latency_median": statistics.median(latencies) if latencies else None,
        "spawn_latency_max": max(latencies) if latencies else None,
        "card_type_accuracy": typed / carded if carded else None,
        "planted_rooms_without_valid_card": hit - carded,
        "wall_s_median": statistics.median(run["wall_s"] for run in runs),
    }


def fmt(value) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="debates per deck (default 3)")
    parser.add_argument("--detector", choices=["scripted", "embedded", "both"], default="both")
    parser.add_argument(
        "--embedded-seeds", type=int, default=1, help="seeds for the embedded model"
    )
    parser.add_argument("--similarity", choices=["embedding", "tfidf"], default="embedding")
    args = parser.parse_args()
    kinds = ["scripted", "embedded"] if args.detector == "both" else [args.detector]
    report = {}
    for kind in kinds:
        seeds = args.seeds if kind == "scripted" else args.embedded_seeds
        runs = []
        for deck in DECKS:
            for seed in range(1, seeds + 1):
                out = RESULTS / "bench-debate" / kind / f"{deck.stem}-{seed}"
                runs.append(one(deck, seed, ANALYSTS[kind], out, args.similarity))
                print(
                    f"  {kind} {deck.stem} seed {seed}: {len(runs[-1]['rooms'])} rooms",
                    file=sys.stderr,
                )
        report[kind] = {"figures": score(runs), "runs": runs}
    print(
        f"planted-crux decks: {len(DECKS)} "
        f"({sum(1 for d in DECKS if 'none' in d.stem)} with no crux); "
        f"similarity {args.similarity}; debaters scripted"
    )
    names = list(report[kinds[0]]["figures"])
    print(f"{'':34}" + "".join(f"{k:>12}" for k in kinds))
    for name in names:
        print(f"{name:34}" + "".join(f"{fmt(report[k]['figures'][name]):>12}" for k in kinds))
    print(f"peak memory {peak_rss_mib():.0f} MiB")
    path = RESULTS / "bench-debate" / "detection.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"details: {path}")


if __name__ == "__main__":
    main()
