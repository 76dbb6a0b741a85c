"""While a run's rollouts run, the cyclic collector is out of their way (what was alive before
is frozen, the young generations are collected at ``RUN_GC_THRESHOLD``), and afterwards the
process is as it was: a process that runs many runs (a test session, a benchmark, the web
viewer) keeps neither the threshold nor every run's leftovers frozen."""

from __future__ import annotations

import gc

import pytest
import trio

from loom_sim.rollout.runtime import cells


@pytest.mark.parametrize("fails", [False, True])
def test_rollouts_run_under_the_run_threshold_and_the_collector_is_restored_after(
    monkeypatch, fails
):
    seen = []

    async def rollouts(*args):
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        if fails:
            raise RuntimeError("a rollout failed")
        return []

    monkeypatch.setattr(cells, "_run_cells", rollouts)
    before = gc.get_threshold()
    assert before != cells.RUN_GC_THRESHOLD

    def run():
        return trio.run(cells.run_cells, [], None, None, None, 1, object)

    if fails:
        with pytest.raises(RuntimeError, match="a rollout failed"):
            run()
    else:
        assert run() == []
    [(threshold, frozen)] = seen
    assert threshold == cells.RUN_GC_THRESHOLD
    assert frozen > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
