"""How often the detectors behind a harness scorecard are right, as measured.

Why: a failed action, a met criterion or a "saying little" reflection is a detector's verdict,
and a reader weighing a scorecard should see how far that detector can be trusted. Each was
measured on a labelled set of positives and near-misses written for the purpose
(``tests/data/validity/harness_*.jsonl``, ``benchmarks/validity_harness.py``); the figures are
kept here so a scorecard and a report can state them, and a test re-measures them on every run
so they cannot drift from what the detectors do.

A figure holds only for the detector it measured: a pack that gives its own
``failure_pattern`` or ``continuation_prompt`` gets no figures for it.
"""

from __future__ import annotations

from typing import Any

MEASURED_BY = "benchmarks/validity_harness.py"

#: detector -> what it decides, and its measured n, precision and recall (deterministic path)
MEASURED: dict[str, dict[str, Any]] = {
    "failure_pattern": {
        "decides": "a reply reports an error (a failed action)",
        "n": 104,
        "precision": 1.0,
        "recall": 0.9623,
    },
    "continuation_prompt": {
        "decides": "the program waits at a continuation prompt",
        "n": 62,
        "precision": 1.0,
        "recall": 0.9615,
    },
    "supported_met": {
        "decides": "an evaluator's evidence quotes the transcript or names an event or file",
        "n": 48,
        "precision": 1.0,
        "recall": 0.9545,
    },
    "reflection_quality": {
        "decides": "a reflection says too little (empty, filler, echoed fields, a repeat)",
        "n": 36,
        "precision": 1.0,
        "recall": 0.9444,
    },
}


def figures(name: str, applies: bool = True) -> dict[str, Any]:
    """What a scorecard says of detector ``name``: its measured figures, or why there are
    none (the pack replaced the detector with its own)."""
    if not applies:
        return {"detector": name, "note": "the pack's own; not measured"}
    return {"detector": name, **MEASURED[name], "measured_by": MEASURED_BY}


def line(name: str, applies: bool = True) -> str:
    """The figures in a few words, for a report: ``failure_pattern P 1.00 R 0.97 (n=76)``."""
    if not applies:
        return f"{name}: the pack's own, not measured"
    m = MEASURED[name]
    return f"{name} P {m['precision']:.2f} R {m['recall']:.2f} (n={m['n']})"
