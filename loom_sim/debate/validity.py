"""How often the debate's detectors are right, as last measured: read from one file.

``benchmarks/validity_debate.py --embedded --write`` runs each detector over its labelled set
(``tests/data/validity/debate_*.jsonl``: positives and near misses written for the purpose)
and writes ``validity.json`` next to this module, with the date it was measured; the debate
report quotes it wherever it shows a detector's verdict, so a reader can weigh the verdict by
its measured error, and ``tests/test_debate_validity.py`` fails when the file no longer
matches what the benchmark measures. Nothing else holds these figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

#: What each detector is, in a report's words.
LABELS = {
    "gate": "the cheap-signal gate",
    "disagreement": "a detection round with the scripted detector",
    "citation_stance": "the citation stance check",
    "crux_type": "the scripted card writer's crux type",
}


@dataclass(frozen=True)
class Figure:
    detector: str
    path: str  # deterministic (TF-IDF similarity, no model) or embedded (MiniLM similarity)
    n: int  # labelled items
    precision: float
    recall: float

    def __str__(self) -> str:
        return (
            f"{LABELS.get(self.detector, self.detector)}: precision {self.precision:.2f}, "
            f"recall {self.recall:.2f} on {self.n} labelled cases"
        )


@dataclass(frozen=True)
class Measured:
    date: str
    figures: tuple[Figure, ...]

    def get(self, detector: str, path: str = "deterministic") -> Figure | None:
        found = [f for f in self.figures if f.detector == detector]
        return next((f for f in found if f.path == path), found[0] if found else None)


@cache
def measured() -> Measured:
    data = json.loads(files("loom_sim.debate").joinpath("validity.json").read_text("utf-8"))
    return Measured(
        data["measured"],
        tuple(
            Figure(r["detector"], r["path"], r["n"], r["precision"], r["recall"])
            for r in data["rows"]
        ),
    )
