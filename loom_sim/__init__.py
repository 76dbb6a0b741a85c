"""loom-sim: faithful long-horizon persona simulation with LLMs.

A researcher declares a persona and the trajectory it should follow; loom-sim assembles the
scaffolding prompt for every turn, runs the persona against the model under evaluation, watches
the conversation while it runs, scores it and reports what happened.

From Python (a script or a notebook; see docs/python.md)::

    import loom_sim

    run = loom_sim.run("mania_patient", target="openai/gpt-4o-mini", turns=4)
    run.turns()        # a pandas data frame, one row a turn
    run.compare()      # per target and scorer, the mean and its interval
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Run",
    "__version__",
    "compare_runs",
    "load",
    "run",
    "run_async",
    "score",
    "score_async",
]

# Where each public name lives, imported on first use: ``loom-sim --help`` and ``validate``
# (which import this package) need not pay for the pipeline or pandas. Named by string, never
# imported here (not even for type checkers): the lowest layers import ``__version__`` from
# this package, and an import of the API from it would point the layers upward. The typed
# signatures are those of loom_sim.api.public.
_PUBLIC = {
    "run": "loom_sim.api.public",
    "run_async": "loom_sim.api.public",
    "score": "loom_sim.api.public",
    "score_async": "loom_sim.api.public",
    "load": "loom_sim.api.public",
    "compare_runs": "loom_sim.api.public",
    "Run": "loom_sim.api.results",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        found = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = found
        return found
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Read from the installed metadata on first use, not at import.
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("loom-sim")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
