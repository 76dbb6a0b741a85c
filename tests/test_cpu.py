"""Threads for the embedded model: the cores this process may use, or LOOM_SIM_THREADS."""

from __future__ import annotations

import os

import pytest

from loom_sim import cpu
from loom_sim.errors import LoomError


def test_threads_follow_the_affinity_mask_not_the_machine(monkeypatch):
    monkeypatch.delenv(cpu.THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert cpu.threads() == 3


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
