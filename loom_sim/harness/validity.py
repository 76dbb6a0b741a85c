"""How often the detectors behind a harness scorecard are right, as measured.

Why: a failed action, a met criterion or a "saying little" reflection is a detector's verdict,
and a reader weighing a scorecard should see how far that detector can be trusted. The figures
live in :mod:`loom_sim.validity` (``benchmarks/validity_harness.py`` measures them: on the sets
the detectors' authors wrote, and on held-out sets — real programs' output captured by running
them, evidence sentences written by a separate process — that they never saw); this module
gives each detector's held-out figures in the scorecard's shape, and says "a weak signal" where
they fall below the bar.

A figure holds only for the detector it measured: a pack that gives its own
``failure_pattern`` or ``continuation_prompt`` gets no figures for it.
"""

from __future__ import annotations

from typing import Any

from loom_sim import validity

MEASURED_BY = "benchmarks/validity_harness.py"

#: detector -> what it decides
DECIDES: dict[str, str] = {
    "failure_pattern": "a reply reports an error (a failed action)",
    "continuation_prompt": "the program waits at a continuation prompt",
    "supported_met": "an evaluator's evidence quotes the transcript or names an event or file",
    "reflection_quality": "a reflection says too little (empty, filler, echoed fields, a repeat)",
}


def _shown(name: str) -> dict[str, Any]:
    standing = validity.standing(name)
    figure = standing.shown
    assert figure is not None, f"no measured figures for {name}"
    return {
        "decides": DECIDES[name],
        "split": figure.split,
        "n": figure.n,
        "precision": figure.precision,
        "precision_ci": list(figure.precision_ci) if figure.precision_ci else None,
        "recall": figure.recall,
        "recall_ci": list(figure.recall_ci) if figure.recall_ci else None,
        "weak_signal": standing.weak,
    }


#: detector -> what it decides and its figures (held-out where it has a held-out set)
MEASURED: dict[str, dict[str, Any]] = {name: _shown(name) for name in DECIDES}


def figures(name: str, applies: bool = True) -> dict[str, Any]:
    """What a scorecard says of detector ``name``: its measured figures, or why there are
    none (the pack replaced the detector with its own)."""
    if not applies:
        return {"detector": name, "note": "the pack's own; not measured"}
    return {"detector": name, **MEASURED[name], "measured_by": MEASURED_BY}


def line(name: str, applies: bool = True) -> str:
    """The figures in a few words, for a report: ``failure_pattern P 1.00 R 0.97 (n=76
    held out)``, with ``, a weak signal`` where it is one."""
    if not applies:
        return f"{name}: the pack's own, not measured"
    m = MEASURED[name]
    where = "held out" if m["split"] == "test" else "its authors' set"
    return f"{name} P {m['precision']:.2f} R {m['recall']:.2f} (n={m['n']} {where})" + (
        ", a weak signal" if m["weak_signal"] else ""
    )
