"""How often the debate's detectors are right, as last measured, in the words its report uses.

The figures themselves live in :mod:`loom_sim.validity` (one file for every system, written by
``benchmarks/bench_validity.py --write``); this module names the debate's four detectors and
says each one's figures as a report sentence: the held-out (test) figures where the detector
has a held-out set, and plainly "a weak signal" where those fall below the bar.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_sim import validity

#: What each detector is, in a report's words.
LABELS = {
    "gate": "the cheap-signal gate",
    "disagreement": "a detection round with the scripted detector",
    "citation_stance": "the citation stance check",
    "crux_type": "the scripted card writer's crux type",
    "crux_type_reading": "the learned reading of the type",
}


@dataclass(frozen=True)
class Figure:
    detector: str
    path: str  # deterministic: no generative model (``<detector>[fallback]``: no MiniLM either)
    standing: validity.Standing

    @property
    def n(self) -> int:
        shown = self.standing.shown
        return shown.n if shown else 0

    def __str__(self) -> str:
        name, fallback, _ = self.detector.partition("[fallback]")
        label = LABELS.get(name, name) + (" (its fallback)" if fallback else "")
        return f"{label}: {self.standing.sentence()}"


@dataclass(frozen=True)
class Measured:
    date: str

    def get(self, detector: str, path: str = "deterministic") -> Figure | None:
        found = validity.standing(detector, path)
        if found.shown is None and path != "deterministic":
            found = validity.standing(detector)
            path = "deterministic"
        return Figure(detector, path, found) if found.shown is not None else None


def measured() -> Measured:
    return Measured(validity.measured().date)
