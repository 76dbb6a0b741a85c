"""Threads for the embedded model: the cores this process may use less the other tasks running,
or LOOM_SIM_THREADS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loom_sim import cpu
from loom_sim.errors import LoomError


def test_threads_follow_the_affinity_mask_not_the_machine(monkeypatch):
    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(cpu, "others_running", lambda: 0)
    assert cpu.threads() == 3


@pytest.mark.parametrize(
    ("loadavg", "expected"),
    [
        ("0.10 0.20 0.30 1/120 4242\n", 3),  # only the reader: every core
        ("2.00 2.00 2.00 3/120 4242\n", 1),  # two others: one core left
        ("9.00 9.00 9.00 12/120 4242\n", 1),  # more than the cores: still one thread
        ("garbled\n", 3),  # the system does not say: every core
    ],
)
def test_other_running_tasks_leave_their_cores(monkeypatch, tmp_path, loadavg, expected):
    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    (tmp_path / "loadavg").write_text(loadavg)
    monkeypatch.setattr(cpu, "LOADAVG", tmp_path / "loadavg")
    monkeypatch.setattr(cpu, "own_running", lambda: 1)
    assert cpu.threads() == expected


def test_this_process_running_threads_are_not_another_program(monkeypatch, tmp_path):
    """The embedding model loads in a worker thread while the embedded model loads in another:
    that is this process's own work, not a busy machine."""
    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    (tmp_path / "loadavg").write_text("2.00 2.00 2.00 2/120 4242\n")
    tasks = tmp_path / "task"
    for tid, name, state in [(10, "python", "R"), (11, "a (worker) thread", "R"), (12, "x", "S")]:
        (tasks / str(tid)).mkdir(parents=True)
        (tasks / str(tid) / "stat").write_text(f"{tid} ({name}) {state} 1 2 3\n")
    monkeypatch.setattr(cpu, "LOADAVG", tmp_path / "loadavg")
    monkeypatch.setattr(cpu, "OWN_TASKS", tasks)
    assert cpu.own_running() == 2
    assert cpu.others_running() == 0
    assert cpu.threads() == 2
    # the real /proc: at least the thread asking is running
    monkeypatch.setattr(cpu, "OWN_TASKS", Path("/proc/self/task"))
    assert cpu.own_running() >= 1


def test_two_cpu_bound_programs_take_two_cores_from_the_default(monkeypatch):
    """Two real ``yes`` processes are running or ready to run, and a look sees them.

    Not every look: a look is an instant, and at that instant this process's own threads (a
    thread pool left spinning by an earlier test) can be counted in one reading and not the
    other, or a container's CPU quota can hold the two programs off the run queue. So the test
    looks until it sees them (a bounded number of looks), then asks for the default at such a
    moment: what is determined is that the two are seen, and that seeing them costs two cores.
    """
    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        seen: list[int] = []
        while len(seen) < 400 and max(seen, default=0) < 2:
            seen.append(cpu.others_running())
        assert max(seen) >= 2, f"looked {len(seen)} times, saw {sorted(set(seen))} others"
        monkeypatch.setattr(cpu, "others_running", lambda: max(seen))
        assert cpu.threads() == max(1, cpu.cores() - max(seen))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_threads_can_be_set(monkeypatch):
    monkeypatch.setenv(cpu.THREADS_ENV, "1")
    assert cpu.threads() == 1
    for bad in ("0", "two", "-3"):
        monkeypatch.setenv(cpu.THREADS_ENV, bad)
        with pytest.raises(LoomError, match="LOOM_SIM_THREADS"):
            cpu.threads()


def test_a_bad_setting_is_said_before_a_run_starts(monkeypatch):
    from loom_sim.models.hub import ModelHub

    monkeypatch.setenv(cpu.THREADS_ENV, "lots")
    with pytest.raises(LoomError, match="LOOM_SIM_THREADS='lots'"):
        ModelHub().check("local/smollm2")


def test_checking_a_local_model_does_not_look_at_the_machine(monkeypatch):
    """A run checks every rollout's models before it starts (256 rollouts: 256 checks, on the
    event loop); looking at the machine takes milliseconds of sleeps, and is for when a model
    loads."""
    from loom_sim.models.hub import ModelHub

    def looked() -> int:
        raise AssertionError("the check looked at the running tasks")

    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    monkeypatch.setattr(cpu, "others_running", looked)
    ModelHub().check("local/smollm2")
    monkeypatch.setenv(cpu.THREADS_ENV, "2")
    ModelHub().check("local/smollm2")
    assert cpu.setting() == 2
