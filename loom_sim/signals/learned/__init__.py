"""Checks learned from labelled examples: a logistic regression over features a detector
computes (similarities from the run's MiniLM embeddings, word overlap, the embedding itself).

Why: word lists and one similarity threshold catch what their authors thought of. Measured on
text they never saw, they missed most paraphrase, hedging and reported speech. A small linear
model over the same signals, fitted on labelled dev items, weighs them together and
generalises better — and stays cheap, deterministic and readable: a check here is a JSON file
of feature names, their scaling, weights and a threshold, applied with numpy alone (no
scikit-learn at run time).

Each file is written by ``scripts/train_checks.py``, which fits it on the **dev** items only
(``benchmarks/_validity.py`` says which), and records what it was trained on (its data card:
the sets, counts, the cross-validated score on dev, the date and library versions). The held-
out figures that reports quote come from ``benchmarks/bench_validity.py``, never from here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

import numpy as np

__all__ = ["LearnedCheck", "LearnedChoice", "check", "choice"]


@dataclass(frozen=True)
class LearnedCheck:
    """A fitted logistic regression: ``p = sigmoid(((x - mean) / scale) · coef + intercept)``,
    positive at ``p >= threshold``."""

    name: str
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float
    card: dict[str, Any]

    def probability(self, x: np.ndarray) -> float:
        if x.shape != self.mean.shape:
            raise ValueError(f"{self.name} expects {self.mean.shape[0]} features, got {x.shape}")
        z = float(((x - self.mean) / self.scale) @ self.coef) + self.intercept
        if not math.isfinite(z):
            raise ValueError(f"{self.name}: features give no finite score: {x!r}")
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def decide(self, x: np.ndarray) -> tuple[bool, float]:
        """(positive, probability) for one feature vector."""
        p = self.probability(x)
        return p >= self.threshold, p

    def margin(self, p: float) -> float:
        """How far ``p`` is from the threshold: findings within
        :data:`UNCERTAIN` of it are reported as uncertain."""
        return abs(p - self.threshold)


#: A finding whose probability is within this of its check's threshold is "uncertain".
UNCERTAIN = 0.15


def _fitted(name: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A shipped check's file: its data, and its scaling and weights as arrays."""
    data = json.loads(files("loom_sim.signals.learned").joinpath(f"{name}.json").read_text())
    arrays = {k: np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")}
    return data, arrays


@cache
def check(name: str) -> LearnedCheck:
    """The shipped check ``name`` (``loop``, ``pair``, ``citation``)."""
    data, arrays = _fitted(name)
    return LearnedCheck(
        name=name,
        features=tuple(data["features"]),
        **arrays,
        intercept=float(data["intercept"]),
        threshold=float(data["threshold"]),
        card=data["card"],
    )


@dataclass(frozen=True)
class LearnedChoice:
    """A fitted multinomial logistic regression: one of ``classes`` for a feature vector,
    ``softmax(((x - mean) / scale) @ coef.T + intercept)``. Its answer is uncertain when the
    two likeliest classes lie within :data:`UNCERTAIN` of each other."""

    name: str
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray
    card: dict[str, Any]

    def probabilities(self, x: np.ndarray) -> dict[str, float]:
        if x.shape != self.mean.shape:
            raise ValueError(f"{self.name} expects {self.mean.shape[0]} features, got {x.shape}")
        z = self.coef @ ((x - self.mean) / self.scale) + self.intercept
        if not np.all(np.isfinite(z)):
            raise ValueError(f"{self.name}: features give no finite score")
        e = np.exp(z - z.max())
        p = e / e.sum()
        return {c: float(v) for c, v in zip(self.classes, p, strict=True)}

    def decide(self, x: np.ndarray) -> tuple[str, float, bool]:
        """(the likeliest class, its probability, uncertain)."""
        ranked = sorted(self.probabilities(x).items(), key=lambda kv: -kv[1])
        top, p = ranked[0]
        runner = ranked[1][1] if len(ranked) > 1 else 0.0
        return top, p, p - runner < UNCERTAIN


@cache
def choice(name: str) -> LearnedChoice:
    """The shipped multi-class check ``name`` (``crux_type``)."""
    data, arrays = _fitted(name)
    return LearnedChoice(
        name=name,
        classes=tuple(data["classes"]),
        **arrays,
        intercept=np.asarray(data["intercept"], dtype=np.float64),
        card=data["card"],
    )
