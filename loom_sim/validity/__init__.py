"""How often each detector is right, as last measured: the one place reports read it from.

Why it exists: a score, a "revealed" or a failed action is a detector's verdict, and a reader
can weigh a verdict only with the detector's error beside it. The figures that matter are those
on text the detector was never tuned to: ``benchmarks/bench_validity.py`` measures every
detector on two splits of its labelled items —

* **dev**: the sets its authors wrote while building it, and half of the blind sets: what
  thresholds, word lists and classifiers were fitted on;
* **test**: the other half of the blind sets (written or captured by a separate process that
  never read the detector; real persona turns from published transcripts; real programs'
  output), never fitted on —

and ``--write`` stores both, with 95 % intervals and the date, in ``measured.json`` beside this
module. A test re-measures them and fails when they no longer match, so a report never quotes
figures a detector no longer earns.

A detector whose test figures fall below :data:`BAR` is a **weak signal**, and every sentence
about it says so and by how much (:meth:`Standing.sentence`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

__all__ = ["BAR", "Figure", "Measured", "Standing", "measured", "standing"]

#: The least test precision and recall for a detector to count as more than a weak signal.
BAR = {"precision": 0.85, "recall": 0.80}


@dataclass(frozen=True)
class Figure:
    """One detector's precision and recall on one split, by one path."""

    system: str  # rollout ("loom"), harness or debate
    detector: str
    path: str  # deterministic (no generative model) or embedded (confirmed by the model)
    split: str  # dev or test
    n: int  # labelled decisions
    precision: float
    recall: float
    precision_ci: tuple[float, float] | None  # 95 %; None when there was nothing to count
    recall_ci: tuple[float, float] | None

    def brief(self) -> str:
        """``precision 0.91 [0.80, 0.96], recall 0.88 [0.75, 0.95]``."""

        def one(name: str, value: float, ci: tuple[float, float] | None) -> str:
            return f"{name} {value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

        return (
            one("precision", self.precision, self.precision_ci)
            + ", "
            + one("recall", self.recall, self.recall_ci)
        )


@dataclass(frozen=True)
class Standing:
    """What a report says of a detector: its test figures (or, lacking a held-out set, its
    dev figures, said to be such), and whether it is a weak signal."""

    detector: str
    test: Figure | None
    dev: Figure | None

    @property
    def shown(self) -> Figure | None:
        return self.test or self.dev

    @property
    def shortfall(self) -> dict[str, float]:
        """How far the test figures fall below :data:`BAR`, by measure (empty: none)."""
        if self.test is None:
            return {}
        got = {"precision": self.test.precision, "recall": self.test.recall}
        return {k: round(BAR[k] - got[k], 2) for k in BAR if got[k] < BAR[k]}

    @property
    def weak(self) -> bool:
        return bool(self.shortfall)

    def sentence(self) -> str:
        """``precision 0.91 [0.80, 0.96], recall 0.88 [0.75, 0.95] on 96 held-out cases``, and
        ``: a weak signal, recall 0.17 below 0.80`` where it is one."""
        figure = self.shown
        if figure is None:
            return "not measured"
        if self.test is None:
            return f"{figure.brief()} on {figure.n} cases its authors wrote (no held-out set)"
        text = f"{figure.brief()} on {figure.n} held-out cases"
        if self.weak:
            gaps = ", ".join(
                f"{k} {gap:.2f} below {BAR[k]:.2f}" for k, gap in self.shortfall.items()
            )
            text += f": a weak signal, {gaps}"
        return text


@dataclass(frozen=True)
class Measured:
    date: str
    figures: tuple[Figure, ...]

    def get(self, detector: str, split: str = "test", path: str = "deterministic") -> Figure | None:
        return next(
            (f for f in self.figures if (f.detector, f.split, f.path) == (detector, split, path)),
            None,
        )


def _pair(value: list[float] | None) -> tuple[float, float] | None:
    return (value[0], value[1]) if value else None


@cache
def measured() -> Measured:
    data = json.loads(files("loom_sim.validity").joinpath("measured.json").read_text("utf-8"))
    return Measured(
        data["measured"],
        tuple(
            Figure(
                r["system"],
                r["detector"],
                r["path"],
                r["split"],
                r["n"],
                r["precision"],
                r["recall"],
                _pair(r.get("precision_ci")),
                _pair(r.get("recall_ci")),
            )
            for r in data["rows"]
        ),
    )


def standing(detector: str, path: str = "deterministic") -> Standing:
    """``detector``'s standing by ``path``: what reports say of it."""
    found = measured()
    return Standing(detector, found.get(detector, "test", path), found.get(detector, "dev", path))
