"""How a run's cells were spread over processes and machines: shards and executions.

Two records that ``run.json`` (either kind) may carry, both optional and absent from a run
made in one process:

* :class:`Shard` — this run directory holds one shard (``--shard k/N``) of a run: the cells
  whose place in the run's order is ``k-1`` modulo ``N``. Round-robin over the order, not
  blocks of it, so every shard gets a similar share of every arm (the order is rollout-major)
  and the shards finish at about the same time. ``loom-sim merge`` joins the shards and drops
  the record.
* :class:`Execution` — one ``--executor ray`` pass over the run (its rollouts, or their
  scoring): where it ran, and which cells Ray had to run again because their worker or node
  was lost; or one pass of the ``processes`` executor (``--workers N``): how many worker
  processes, and the cells a worker that died left unfinished. Appended when the pass ends,
  so the record of a run resumed three times says so three times.
"""

from __future__ import annotations

import re

import msgspec

from loom_sim.errors import LoomError

__all__ = ["Execution", "Shard", "parse_shard"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class Shard(msgspec.Struct, frozen=True):
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, position: int) -> bool:
        """Whether the cell at ``position`` in the run's order belongs to this shard."""
        return position % self.count == self.index - 1


def parse_shard(text: str) -> Shard:
    """``"2/3"`` -> ``Shard(2, 3)``; one sentence when it is not ``k/N`` with 1 <= k <= N."""
    found = _SHARD.match(text)
    if found is None:
        raise LoomError(f"--shard {text!r}: write it as k/N, e.g. 2/3 for the second of three")
    index, count = int(found[1]), int(found[2])
    if count < 1 or not 1 <= index <= count:
        raise LoomError(f"--shard {text}: k must be between 1 and N (here N is {count})")
    return Shard(index, count)


class Execution(msgspec.Struct, frozen=True, kw_only=True):
    """One pass of a distributed executor over a run."""

    executor: str  # "ray" or "processes"
    phase: str  # "run" (rollouts) or "score"
    started_at: str
    ended_at: str
    address: str | None = None  # the cluster joined (redacted); None: a Ray started for it
    nodes: int = 1  # nodes alive when the pass began
    cells: int = 0  # units of work handed out (cells, or rollouts to score)
    retries: dict[str, int] = msgspec.field(default_factory=dict)  # cell id -> runs again
    lost: list[str] = msgspec.field(default_factory=list)  # cells that ran out of retries
    workers: int | None = None  # processes: the worker processes the cells were split over
