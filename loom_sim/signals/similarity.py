"""Similarity measures over unit vectors, shared by the monitors and the analysis."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mean_pairwise(vectors: np.ndarray) -> float:
    """Mean cosine similarity over all pairs of rows (0 for fewer than two rows)."""
    n = len(vectors)
    if n < 2:
        return 0.0
    sims = vectors @ vectors.T
    upper = sims[np.triu_indices(n, k=1)]
    return float(np.clip(upper.mean(), -1.0, 1.0))


def rowwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``a`` with the same row of ``b``."""
    return np.clip(np.sum(a * b, axis=1), -1.0, 1.0)


def max_to_earlier(vectors: np.ndarray) -> list[float]:
    """For each row, its highest similarity to any earlier row (0 for the first)."""
    out = [0.0]
    for i in range(1, len(vectors)):
        out.append(float(np.max(vectors[:i] @ vectors[i])))
    return out


def slope(values: Sequence[float]) -> float:
    """Least-squares slope per step (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    x = np.arange(len(values), dtype=float)
    return float(np.polyfit(x, np.asarray(values, dtype=float), 1)[0])
