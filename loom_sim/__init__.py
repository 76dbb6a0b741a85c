"""loom-sim: faithful long-horizon persona simulation with LLMs.

A researcher declares a persona and the trajectory it should follow; loom-sim assembles the
scaffolding prompt for every turn, runs the persona against the model under evaluation, watches
the conversation while it runs, scores it and reports what happened.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("loom-sim")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
