"""While a run's rollouts run, the cyclic collector is out of their way (what was alive before
is frozen, the young generations are collected at ``RUN_GC_THRESHOLD``), and afterwards the
process is as it was: a process that runs many runs (a test session, a benchmark, the web
viewer) keeps neither the threshold nor every run's leftovers frozen. And the actor kinds are
imported before the first rollout spawns one, not from inside it."""

from __future__ import annotations

import gc
import subprocess
import sys

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


def test_the_actor_kinds_are_imported_before_the_first_rollout():
    # A fresh interpreter, as a worker process of the ``processes`` executor starts: its
    # registries unread until the run reads them.
    script = """
import sys, trio
from loom_sim.plugins.actors import ACTORS
from loom_sim.rollout.runtime import cells
assert "loom_sim.debate.actors" not in sys.modules
seen = []
async def rollouts(*args):
    seen.append((ACTORS._loaded, "loom_sim.debate.actors" in sys.modules))
    return []
cells._run_cells = rollouts
trio.run(cells.run_cells, [], None, None, None, 1, object)
print(seen)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[(True, True)]"
