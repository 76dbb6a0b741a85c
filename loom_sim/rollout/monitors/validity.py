"""The measured error of the Loom monitors' detectors, shown beside their verdicts.

A verdict is evidence only with its error rate beside it. These are the deterministic paths'
figures on the labelled sets in tests/data/validity/loom_*.jsonl, as
``benchmarks/validity_loom.py`` measures them; a test re-measures them and fails when they
differ, so the report never shows figures the detectors no longer earn.
"""

from __future__ import annotations

MEASURED: dict[str, dict[str, float]] = {
    "loop_after_redirect": {"n": 36, "precision": 1.0, "recall": 1.0},
    "loop_after_redirect[fallback]": {"n": 36, "precision": 1.0, "recall": 1.0},
    "revelation": {"n": 144, "precision": 0.947, "recall": 0.9},
    "revelation[fallback]": {"n": 144, "precision": 1.0, "recall": 0.1},
    "capitulation": {"n": 52, "precision": 1.0, "recall": 1.0},
    "capitulation[words only]": {"n": 52, "precision": 1.0, "recall": 1.0},
    "capitulation[embedding only]": {"n": 52, "precision": 1.0, "recall": 0.346},
}


def figures(detector: str) -> str:
    """``precision P, recall R on N labelled cases`` for ``detector``."""
    f = MEASURED[detector]
    return (
        f"precision {f['precision']:.2f}, recall {f['recall']:.2f} on {int(f['n'])} labelled cases"
    )
