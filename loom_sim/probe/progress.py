"""Progress of a probe: a live table on a terminal, a few plain lines otherwise.

The runner reports to a :class:`~loom_sim.probe.runner.ProbeProgress` and never formats output
itself. Plain progress prints about ten lines per mode, not one per run: a 200-run probe in a
CI log should be readable.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO

from loom_sim.core.progress import LiveTable
from loom_sim.probe.records import ProbeRecord


@dataclass
class _Row:
    runs: int
    done: int = 0
    successes: int = 0
    unjudged: int = 0
    status: str = "running"
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    def add(self, record: ProbeRecord) -> None:
        self.done += 1
        self.successes += record.success is True
        self.unjudged += record.success is None

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def line(self) -> str:
        judged = self.done - self.unjudged
        text = f"{self.done}/{self.runs} runs, {self.successes}/{judged} contradictions"
        return text + (f", {self.unjudged} unjudged" if self.unjudged else "")


class PlainProbeProgress:
    """Lines on stderr: a mode's start, about every tenth of its runs, and its end."""

    def __init__(self, stream: IO[str] | None = None):
        self._stream = stream or sys.stderr
        self._rows: dict[str, _Row] = {}

    def _say(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def mode_started(self, mode: str, runs: int) -> None:
        self._rows[mode] = _Row(runs)
        self._say(f"{mode}: {runs} runs")

    def run_done(self, record: ProbeRecord) -> None:
        row = self._rows[record.mode]
        row.add(record)
        if row.done % max(1, math.ceil(row.runs / 10)) == 0 and row.done < row.runs:
            self._say(f"{record.mode}: {row.line()} · {row.elapsed:.1f}s")

    def mode_ended(self, mode: str, completed: int, status: str) -> None:
        row = self._rows[mode]
        row.ended = time.monotonic()
        self._say(f"{mode}: {status}, {row.line()} · {row.elapsed:.1f}s")


class RichProbeProgress(LiveTable):
    """A live table, one row per mode: runs, contradictions, unjudged, elapsed, status."""

    title = "loom-sim probe"
    columns = ("mode", "runs", "contradictions", "unjudged", "elapsed", "status")
    left = frozenset({"mode", "status"})

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, _Row] = {}

    def rows(self) -> Iterable[Sequence[str]]:
        for mode, row in self._rows.items():
            yield (
                mode,
                f"{row.done}/{row.runs}",
                f"{row.successes}/{row.done - row.unjudged}",
                str(row.unjudged),
                f"{row.elapsed:.1f}s",
                row.status,
            )

    def mode_started(self, mode: str, runs: int) -> None:
        self._rows[mode] = _Row(runs)

    def run_done(self, record: ProbeRecord) -> None:
        self._rows[record.mode].add(record)

    def mode_ended(self, mode: str, completed: int, status: str) -> None:
        row = self._rows[mode]
        row.status, row.ended = status, time.monotonic()
