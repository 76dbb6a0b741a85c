"""loom-sim: faithful long-horizon persona simulation with LLMs.

A researcher declares a persona and the trajectory it should follow; loom-sim assembles the
scaffolding prompt for every turn, runs the persona against the model under evaluation, watches
the conversation while it runs, scores it and reports what happened.
"""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # Read from the installed metadata on first use, not at import: ``loom-sim --help`` and
    # ``validate`` need not pay for importlib.metadata.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("loom-sim")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
