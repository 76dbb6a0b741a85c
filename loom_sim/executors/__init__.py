"""Where a run's units of work run: this process (``local``), worker processes on this
machine (``processes``) or a Ray cluster (``ray``).

See :mod:`loom_sim.executors.base`. Importing this package registers loom-sim's three
executors; the Ray one imports Ray only when it is chosen.
"""

from loom_sim.executors import local, processes, ray_executor  # noqa: F401  (registers them)
from loom_sim.executors.base import (
    EXECUTORS,
    CellBatch,
    Executor,
    ExecutorInfo,
    ExecutorSettings,
    ScoreBatch,
    executor,
    open_executor,
)

__all__ = [
    "EXECUTORS",
    "CellBatch",
    "Executor",
    "ExecutorInfo",
    "ExecutorSettings",
    "ScoreBatch",
    "executor",
    "open_executor",
]
