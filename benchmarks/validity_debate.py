"""How often the debate's detectors are right, on labelled sets written for the purpose.

    .venv/bin/python benchmarks/validity_debate.py [--embedded] [--write]

Each detector is run over its set in ``tests/data/validity/`` (positives and near misses: a
persona who grants both sides their point, allies who open with "No,", paraphrased
disagreement without negation words, off-topic bystanders) and scored:

* **gate** (``debate_gate.jsonl``) — the cheap opposition signal at the default gate: pairs
  it lets through to the detector model, against the pairs labelled as disagreeing;
* **disagreement** (``debate_disagreement.jsonl``) — a whole detection round on the
  deterministic path: the gate, the scripted detector, corroboration; pairs it reports;
* **citation_stance** (``debate_citation.jsonl``) — does a message support the stance it is
  cited for (a positive is a citation that supports it);
* **crux_type** (``debate_crux_type.jsonl``) — the type read from a room's messages; precision
  and recall are macro-averaged over the six types.

The deterministic path uses TF-IDF similarity; ``--embedded`` adds the path with MiniLM
embeddings for the two detectors that read similarity (the others read no model).
``--write`` stores the figures, with today's date, in ``loom_sim/debate/validity.json``: the
one place the debate report reads them from.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom_sim.debate.crux_type import crux_type
from loom_sim.debate.detection import corroborate, read_detections
from loom_sim.debate.opposition import Claim, Similarity, signals_for, strongest
from loom_sim.debate.settings import DetectionSettings
from loom_sim.debate.stance import Side, side
from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.signals.embedding import load_backend

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "validity"
SHIPPED = ROOT / "loom_sim" / "debate" / "validity.json"
TYPES = ("horizon", "evidence", "values", "definition", "claim", "premise")


def load(name: str) -> list[dict[str, Any]]:
    path = DATA / f"debate_{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _pr(tp: int, fp: int, fn: int) -> tuple[float, float]:
    return (tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0)


def _row(detector: str, path: str, n: int, tp: int, fp: int, fn: int) -> dict[str, Any]:
    precision, recall = _pr(tp, fp, fn)
    return {
        "detector": detector,
        "path": path,
        "n": n,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
    }


def _signals(window: list[dict[str, Any]], similarity: Similarity) -> dict:
    claims = [Claim(m["id"], m["speaker"], m["text"], m.get("reply_to")) for m in window]
    found = []
    for end in range(1, len(claims) + 1):
        part = claims[:end]
        found += signals_for(part[-1], part, similarity.matrix(part))
    return strongest(found)


def _score_pairs(items, predict: Callable[[dict[str, Any]], set[tuple[str, str]]]):
    tp = fp = fn = 0
    for item in items:
        truth = {tuple(sorted(p)) for p in item["opposed"]}
        got = predict(item)
        tp += len(got & truth)
        fp += len(got - truth)
        fn += len(truth - got)
    return tp, fp, fn


def gate(similarity: Similarity, rule: DetectionSettings) -> tuple[int, int, int]:
    def predict(item):
        best = _signals(item["messages"], similarity)
        return {pair for pair, s in best.items() if s.opposition >= rule.gate}

    return _score_pairs(load("gate"), predict)


def disagreement(similarity: Similarity, rule: DetectionSettings) -> tuple[int, int, int]:
    from loom_sim.debate.prompts import Said, transcript
    from loom_sim.debate.scripts import crux_detector

    def predict(item):
        window = item["messages"]
        best = _signals(window, similarity)
        if max((s.opposition for s in best.values()), default=0.0) < rule.gate:
            return set()
        said = [Said(m["id"], m["speaker"], m["speaker"], m["text"]) for m in window]
        request = ModelRequest(messages=[ChatMessage("user", transcript(said, "00000000"))])
        spoke = {m["speaker"] for m in window}
        found = read_detections(json.loads(crux_detector(request)), {p: p for p in spoke}, spoke)
        counted = corroborate(found, best, rule.corroborate)
        return {(d.pair[0], d.pair[1]) for d in counted if d.corroborated}

    return _score_pairs(load("disagreement"), predict)


def citation() -> tuple[int, int, int]:
    wanted = {"YES": Side.FOR, "NO": Side.AGAINST}
    tp = fp = fn = 0
    for item in load("citation"):
        said = side(item["message"], item["claim"]) == wanted[item["stance"]]
        tp += said and item["supports"]
        fp += said and not item["supports"]
        fn += (not said) and item["supports"]
    return tp, fp, fn


def crux_types() -> tuple[float, float, int]:
    items = load("crux_type")
    got = [crux_type(item["texts"]) for item in items]
    precisions, recalls = [], []
    for kind in TYPES:
        tp = sum(1 for g, i in zip(got, items, strict=True) if g == kind == i["type"])
        fp = sum(1 for g, i in zip(got, items, strict=True) if g == kind != i["type"])
        fn = sum(1 for g, i in zip(got, items, strict=True) if i["type"] == kind != g)
        p, r = _pr(tp, fp, fn)
        precisions.append(p)
        recalls.append(r)
    return sum(precisions) / len(TYPES), sum(recalls) / len(TYPES), len(items)


def measure(embedded: bool = False) -> list[dict[str, Any]]:
    """One row per detector and path: detector, path, n, precision, recall."""
    rule = DetectionSettings()
    paths = [("deterministic", "tfidf")] + ([("embedded", "embedding")] if embedded else [])
    rows = []
    for path, backend_name in paths:
        similarity = Similarity(load_backend(backend_name))
        rows.append(_row("gate", path, len(load("gate")), *gate(similarity, rule)))
        rows.append(
            _row("disagreement", path, len(load("disagreement")), *disagreement(similarity, rule))
        )
    rows.append(_row("citation_stance", "deterministic", len(load("citation")), *citation()))
    precision, recall, n = crux_types()
    rows.append(
        {
            "detector": "crux_type",
            "path": "deterministic",
            "n": n,
            "precision": round(precision, 3),
            "recall": round(recall, 3),
        }
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedded", action="store_true", help="also the MiniLM path")
    parser.add_argument("--write", action="store_true", help=f"store the figures in {SHIPPED}")
    args = parser.parse_args()
    rows = measure(args.embedded)
    if args.write:
        measured = datetime.datetime.now(datetime.UTC).date().isoformat()
        text = json.dumps({"measured": measured, "rows": rows}, indent=1) + "\n"
        SHIPPED.write_text(text, encoding="utf-8")
    print(f"{'detector':18}{'path':15}{'n':>5}{'precision':>11}{'recall':>8}")
    for r in rows:
        print(
            f"{r['detector']:18}{r['path']:15}{r['n']:>5}{r['precision']:>11.3f}{r['recall']:>8.3f}"
        )


if __name__ == "__main__":
    sys.exit(main())
