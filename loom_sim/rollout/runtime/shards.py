"""``--shard k/N``: one of N processes' share of a run, for people without a cluster.

Every shard plans the whole run — the same configs, seed and options give the same cells in the
same order on any machine — and records in its ``run.json`` which shard it is
(:class:`~loom_sim.store.distribution.Shard`); :func:`~loom_sim.rollout.runtime.cells.plan_cells`
and
:func:`~loom_sim.rollout.runtime.matrix.matrix_cells` then yield only that shard's cells, for the
first pass and for ``--resume`` alike. ``loom-sim merge`` joins the shards' folders into the
run that one process would have made.
"""

from __future__ import annotations

from pathlib import Path

from loom_sim.rollout.runtime.matrix import MatrixPlan
from loom_sim.rollout.runtime.run import RunPlan
from loom_sim.store.distribution import Shard

__all__ = ["shard_matrix", "shard_run", "shard_suffix"]


def shard_suffix(shard: Shard) -> str:
    return f"-shard{shard.index}of{shard.count}"


def _renamed(folder: Path, shard: Shard) -> Path:
    return folder.with_name(folder.name + shard_suffix(shard))


def shard_run(plan: RunPlan, shard: Shard, *, rename: bool) -> None:
    """Make ``plan`` shard ``shard`` of its run; ``rename``: its default folder says so."""
    plan.record.shard = shard
    if rename:
        plan.dir = _renamed(plan.dir, shard)


def shard_matrix(plan: MatrixPlan, shard: Shard, *, rename: bool) -> None:
    """Make a matrix plan shard ``shard`` of its run. The record is the matrix's alone: the
    shard owns cells by their place in the matrix's order, which an arm cannot know, so an
    arm's ``run.json`` stays exactly the unsharded run's."""
    plan.record.shard = shard
    if rename:
        plan.dir = _renamed(plan.dir, shard)
        for arm in plan.arms:
            arm.dir = plan.dir / arm.dir.name
