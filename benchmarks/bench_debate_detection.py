"""Detection quality on planted cruxes: do rooms open where the disagreement is, and only there?

    .venv/bin/python benchmarks/bench_debate_detection.py [--seeds 3] \
        [--detector scripted|embedded|both] [--similarity embedding|tfidf] \
        [--paraphrased] [--gate 0.3 --gate 0.5 ...]

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
* **rounds asked** — detection rounds in which the detector model was asked (the gate let
  the window through), of all rounds;
* wall time per debate (median) and peak memory.

``--paraphrased`` adds the planted decks kept with the tests (``tests/data/decks/``), whose
pairs disagree without a negation word ("end" against "prolong", "rose" against "fell") and
two of which have a persona who grants each side its point. ``--gate`` runs everything again at
each given detection gate (the deck's ``debate.detection.gate`` replaced), to see what a gate
saves in detector calls and what it costs in cruxes.
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
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, peak_rss_mib

from loom_sim.debate.deck import load_deck
from loom_sim.debate.runtime.plan import DebateOptions, plan_debate
from loom_sim.debate.runtime.run import Debate
from loom_sim.models.hub import ModelHub

ROOT = Path(__file__).resolve().parent.parent
DECKS = sorted((ROOT / "configs" / "decks").glob("planted_*.yaml"))
PARAPHRASED = sorted((ROOT / "tests" / "data" / "decks").glob("paraphrased_*.yaml"))
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


def with_gate(deck_path: Path, gate: float, folder: Path) -> Path:
    """A copy of the deck (in ``folder``) whose detection gate is ``gate``."""
    data = yaml.safe_load(deck_path.read_text(encoding="utf-8"))
    data.setdefault("debate", {}).setdefault("detection", {})["gate"] = gate
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / deck_path.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return copy


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
        "rounds": len(rounds),
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
        "rounds": sum(run["rounds"] for run in runs),
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
    parser.add_argument("--paraphrased", action="store_true", help="add tests/data/decks/")
    parser.add_argument(
        "--gate", type=float, action="append", help="run at this detection gate (repeatable)"
    )
    args = parser.parse_args()
    decks = DECKS + (PARAPHRASED if args.paraphrased else [])
    kinds = ["scripted", "embedded"] if args.detector == "both" else [args.detector]
    gates: list[float | None] = list(args.gate or [None])
    report = {}
    for kind in kinds:
        for gate in gates:
            seeds = args.seeds if kind == "scripted" else args.embedded_seeds
            label = kind if gate is None else f"{kind}@{gate:g}"
            runs = []
            for deck in decks:
                for seed in range(1, seeds + 1):
                    out = RESULTS / "bench-debate" / label / f"{deck.stem}-{seed}"
                    path = deck if gate is None else with_gate(deck, gate, out.parent / "decks")
                    runs.append(one(path, seed, ANALYSTS[kind], out, args.similarity))
                    print(
                        f"  {label} {deck.stem} seed {seed}: {len(runs[-1]['rooms'])} rooms",
                        file=sys.stderr,
                    )
            report[label] = {"figures": score(runs), "runs": runs}
    print(
        f"planted-crux decks: {len(decks)} "
        f"({sum(1 for d in decks if 'none' in d.stem)} with no crux, "
        f"{sum(1 for d in decks if d in PARAPHRASED)} paraphrased); "
        f"similarity {args.similarity}; debaters scripted"
    )
    labels = list(report)
    names = list(report[labels[0]]["figures"])
    print(f"{'':34}" + "".join(f"{k:>14}" for k in labels))
    for name in names:
        print(f"{name:34}" + "".join(f"{fmt(report[k]['figures'][name]):>14}" for k in labels))
    print(f"peak memory {peak_rss_mib():.0f} MiB")
    path = RESULTS / "bench-debate" / "detection.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"details: {path}")


if __name__ == "__main__":
    main()
