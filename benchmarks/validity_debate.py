"""How often the debate's detectors are right, on labelled sets written for the purpose.

    .venv/bin/python benchmarks/validity_debate.py

Each detector is run over its set in ``tests/data/validity/`` (positives and near misses: a
persona who grants both sides their point, allies who open with "No,", paraphrased
disagreement without negation words, off-topic bystanders) and scored:

* **gate** (``debate_gate.jsonl``) — the cheap opposition signal at the default gate: pairs
  it lets through to the detector model, against the pairs labelled as disagreeing;
* **disagreement** (``debate_disagreement.jsonl``) — a whole detection round on the
  deterministic path: the gate, the scripted detector, corroboration; pairs it reports;
* **citation_stance** (``debate_citation.jsonl``) — does a message support the stance it is
  cited for (a positive is a citation that supports it);
* **crux_type** (``debate_crux_type.jsonl``) — the type the scripted card writer reads from a
  room's messages by cue words; precision and recall are macro-averaged over the six types;
* **crux_type_reading** — the same rooms, read by the learned crux-type check (MiniLM and the
  cue counts), the second reading a card's type is shown beside.

The deterministic path is what a debate runs by default: MiniLM similarity, and the learned
pair and citation checks (:mod:`loom_sim.debate.learned`) beside the word readings — a pair
passes the gate, and a citation stands, when either reads it so. ``<name>[fallback]`` rows
measure the words alone, with TF-IDF: what runs where the embedding model cannot load.
Each set is the authors' (``debate_*.jsonl``, dev) and a blind one (``blind/debate_*.jsonl``,
half dev, half test: ``_validity.py``). ``bench_validity.py --write`` stores the figures where
the debate report reads them (``loom_sim/validity/measured.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom_sim.debate import learned
from loom_sim.debate.crux_type import crux_type
from loom_sim.debate.detection import corroborate, read_detections
from loom_sim.debate.opposition import Claim, Similarity, signals_for, strongest
from loom_sim.debate.settings import DetectionSettings
from loom_sim.debate.stance import Side, side
from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.signals.embedding import load_backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _validity import SPLITS, authors, blind, rows_by_split, short

TYPES = ("horizon", "evidence", "values", "definition", "claim", "premise")


def load(name: str) -> list[dict[str, Any]]:
    """The labelled items of ``debate_<name>`` with their split: the authors' set (dev) and
    the blind set (half dev, half test)."""
    return [*authors(f"debate_{name}"), *blind(f"debate_{name}")]


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
    """Each pair's strongest signal in ``window``, with the learned check's reading beside it
    (MiniLM only), as the detector computes them."""
    claims = [Claim(m["id"], m["speaker"], m["text"], m.get("reply_to")) for m in window]
    found = []
    for end in range(1, len(claims) + 1):
        part = claims[:end]
        found += signals_for(part[-1], part, similarity.matrix(part))
    return learned.with_readings(similarity.backend, claims, strongest(found))


def _opens(signal, rule: DetectionSettings) -> bool:
    return signal.opposition >= rule.gate or signal.counts


def _pairs(predict: Callable[[dict[str, Any]], set[tuple[str, str]]]):
    """Per window: each labelled or predicted pair as one (predicted, labelled) decision."""

    def decide(item: dict[str, Any]) -> list[tuple[bool, bool]]:
        truth = {tuple(sorted(p)) for p in item["opposed"]}
        got = {tuple(sorted(p)) for p in predict(item)}
        return [(pair in got, pair in truth) for pair in got | truth]

    return decide


def gate(similarity: Similarity, rule: DetectionSettings):
    def predict(item):
        best = _signals(item["messages"], similarity)
        return {pair for pair, s in best.items() if _opens(s, rule)}

    return _pairs(predict)


def disagreement(similarity: Similarity, rule: DetectionSettings):
    from loom_sim.debate.prompts import Said, transcript
    from loom_sim.debate.scripts import crux_detector

    def predict(item):
        window = item["messages"]
        best = _signals(window, similarity)
        if not any(_opens(s, rule) for s in best.values()):
            return set()
        said = [Said(m["id"], m["speaker"], m["speaker"], m["text"]) for m in window]
        request = ModelRequest(messages=[ChatMessage("user", transcript(said, "00000000"))])
        spoke = {m["speaker"] for m in window}
        found = read_detections(json.loads(crux_detector(request)), {p: p for p in spoke}, spoke)
        counted = corroborate(found, best, rule.corroborate)
        return {(d.pair[0], d.pair[1]) for d in counted if d.corroborated}

    return _pairs(predict)


def citation(backend):
    """Does the cited message support its stance: the clause reading, or (given MiniLM) the
    learned check — either, as card validation reads it."""
    wanted = {"YES": Side.FOR, "NO": Side.AGAINST}

    def decide(item: dict[str, Any]) -> list[tuple[bool, bool]]:
        said = side(item["message"], item["claim"]) == wanted[item["stance"]]
        if not said and backend is not None:
            yes = item["stance"] == "YES"
            said = learned.supports(backend, item["message"], item["claim"], yes).positive
        return [(said, bool(item["supports"]))]

    return decide


def _macro(pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """Macro-averaged precision and recall over the six types of (predicted, labelled)."""
    precisions, recalls = [], []
    for kind in TYPES:
        tp = sum(1 for g, t in pairs if g == kind == t)
        fp = sum(1 for g, t in pairs if g == kind != t)
        fn = sum(1 for g, t in pairs if t == kind != g)
        p, r = _pr(tp, fp, fn)
        precisions.append(p)
        recalls.append(r)
    return sum(precisions) / len(TYPES), sum(recalls) / len(TYPES)


def crux_types(
    split: str, read: Callable[[list[str]], str] = crux_type, detector: str = "crux_type"
) -> dict[str, Any] | None:
    """A crux-type reading's macro precision and recall on ``split`` (the scripted card
    writer's cue words by default), with 95 % percentile bootstrap intervals over rooms (a
    macro average has no Wilson interval; 2,000 seeded resamples)."""
    import random

    items = [i for i in load("crux_type") if i["split"] == split]
    if not items:
        return None
    pairs = [(read(i["texts"]), i["type"]) for i in items]
    precision, recall = _macro(pairs)
    draw = random.Random(0)
    samples = sorted(_macro(draw.choices(pairs, k=len(pairs))) for _ in range(2000))
    ps = sorted(p for p, _ in samples)
    rs = sorted(r for _, r in samples)
    return {
        "detector": detector,
        "path": "deterministic",
        "split": split,
        "n": len(items),
        "precision": round(precision, 3),
        "precision_ci": [round(ps[50], 3), round(ps[1949], 3)],
        "recall": round(recall, 3),
        "recall_ci": [round(rs[50], 3), round(rs[1949], 3)],
    }


def measure(embedded: bool = False) -> list[dict[str, Any]]:
    """One row per detector and split: n, precision and recall with intervals. (No debate
    detector asks a generative model: ``embedded`` adds nothing here.)"""
    rule = DetectionSettings()
    embedding = load_backend("embedding")
    if embedding.name != "embedding":
        raise SystemExit("the embedding model could not be loaded: the figures would be TF-IDF's")
    rows = []
    for suffix, backend in (("", embedding), ("[fallback]", load_backend("tfidf"))):
        similarity = Similarity(backend)
        rows += rows_by_split(
            f"gate{suffix}", "deterministic", load("gate"), gate(similarity, rule)
        )
        rows += rows_by_split(
            f"disagreement{suffix}", "deterministic", load("disagreement"),
            disagreement(similarity, rule),
        )  # fmt: skip
    rows += rows_by_split("citation_stance", "deterministic", load("citation"), citation(embedding))
    rows += rows_by_split(
        "citation_stance[fallback]", "deterministic", load("citation"), citation(None)
    )
    rows += [row for split in SPLITS if (row := crux_types(split))]

    def reading(texts: list[str]) -> str:
        return learned.read_crux_type(embedding, texts).type

    rows += [row for split in SPLITS if (row := crux_types(split, reading, "crux_type_reading"))]
    return rows


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print(
        f"{'detector':26}{'path':15}{'split':6}{'n':>5} {'precision [95% CI]':>18} {'recall':>18}"
    )
    for r in measure():
        print(f"{r['detector']:26}{r['path']:15}{r['split']:6}{r['n']:>5} {short(r)}")


if __name__ == "__main__":
    sys.exit(main())
