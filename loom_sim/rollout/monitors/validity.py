"""The measured error of the Loom monitors' detectors, shown beside their verdicts.

A verdict is evidence only with its error rate beside it. The figures live in
:mod:`loom_sim.validity` (``benchmarks/validity_loom.py`` measures them, on the sets the
detectors' authors wrote and on held-out sets they never saw); this module says them in the
report's words: the held-out figures with their intervals, and "a weak signal" where those
fall below the bar.
"""

from __future__ import annotations

from loom_sim import validity

#: the detectors whose verdicts the rollout report shows
DETECTORS = ("loop_after_redirect", "revelation", "capitulation")


def figures(detector: str) -> str:
    """``precision P [lo, hi], recall R [lo, hi] on N held-out cases`` for ``detector``, with
    ``: a weak signal, …`` where it is one."""
    return validity.standing(detector).sentence()


def weak(detector: str) -> bool:
    """Whether ``detector``'s held-out figures fall below the bar."""
    return validity.standing(detector).weak


#: The local spec the embedded model is measured under, as a judge (``path: embedded``)
EMBEDDED_JUDGE = "local/smollm2"


def judge_figures(spec: str) -> str:
    """How far the capitulation judge ``spec`` was measured to be right on held-out items
    (``benchmarks/bench_validity.py --judge SPEC``), or plainly that it was not."""
    path = "embedded" if spec.startswith(EMBEDDED_JUDGE) else f"judge {spec}"
    found = validity.standing("capitulation[judge]", path)
    if found.shown is None:
        return (
            f"{spec} was not measured as this judge; measure it with "
            f"benchmarks/bench_validity.py --judge {spec}"
        )
    return f"{spec}: {found.sentence()}"
