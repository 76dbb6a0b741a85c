"""Progress of scoring: turns judged, of how many, per scorer; elapsed and remaining.

Scoring a dozen turns with the embedded judge takes minutes; a screen that says only
"scoring..." for that long looks hung. The engine reports to a :class:`ScoreProgress` (it never
formats output itself): a live table on a terminal, a line per turn otherwise, nothing in tests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

from loom_sim.core.progress import LiveTable

if TYPE_CHECKING:
    from rich.table import Table


class ScoreProgress(Protocol):
    def planned(self, rollout: str, turns: int, per_scorer: dict[str, int]) -> None:
        """``rollout`` has ``turns`` turns to score; each scorer, ``per_scorer[name]`` of them."""

    def turn_scored(self, rollout: str, scorers: list[str], failed: list[str]) -> None:
        """One turn of ``rollout`` scored by ``scorers`` (``failed``: those without a value)."""


class NullScoreProgress:
    def planned(self, rollout: str, turns: int, per_scorer: dict[str, int]) -> None:
        pass

    def turn_scored(self, rollout: str, scorers: list[str], failed: list[str]) -> None:
        pass


def _now() -> float:
    return time.monotonic()  # looked up at each call: tests move the clock


@dataclass
class _Tally:
    """Totals over every rollout, and the clock, for both renderers."""

    started: float = field(default_factory=_now)
    turns: int = 0
    done: int = 0
    per_scorer: dict[str, list[int]] = field(default_factory=dict)  # name -> [done, of, failed]

    def plan(self, turns: int, per_scorer: dict[str, int]) -> None:
        self.turns += turns
        for name, count in per_scorer.items():
            self.per_scorer.setdefault(name, [0, 0, 0])[1] += count

    def scored(self, scorers: list[str], failed: list[str]) -> None:
        self.done += 1
        for name in scorers:
            self.per_scorer.setdefault(name, [0, 0, 0])[0] += 1
        for name in failed:
            self.per_scorer[name][2] += 1

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining(self) -> float | None:
        """Seconds left at the pace so far; None before the first turn is scored."""
        if not self.done:
            return None
        return self.elapsed / self.done * max(0, self.turns - self.done)


def clock(seconds: float | None) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


class PlainScoreProgress:
    """A line per scored turn: for logs, pipes and CI. ``arm`` names the matrix arm scored
    (every arm has a rollout_000: without it the lines of two arms read the same)."""

    def __init__(self, stream: IO[str] | None = None, arm: str | None = None):
        self._stream = stream or sys.stderr
        self._arm = f"{arm} " if arm else ""
        self._tally = _Tally()
        self._rollouts: dict[str, list[int]] = {}  # rollout -> [done, of]

    def planned(self, rollout: str, turns: int, per_scorer: dict[str, int]) -> None:
        self._tally.plan(turns, per_scorer)
        self._rollouts[rollout] = [0, turns]

    def turn_scored(self, rollout: str, scorers: list[str], failed: list[str]) -> None:
        self._tally.scored(scorers, failed)
        counts = self._rollouts.setdefault(rollout, [0, 0])
        counts[0] += 1
        tally = self._tally
        note = f" ({len(failed)} without a score)" if failed else ""
        print(
            f"scoring {self._arm}{rollout}: turn {counts[0]}/{counts[1]}{note} · all rollouts "
            f"{tally.done}/{tally.turns} · {clock(tally.elapsed)} elapsed, "
            f"~{clock(tally.remaining())} left",
            file=self._stream,
            flush=True,
        )


class RichScoreProgress(LiveTable):
    """A live table, one row per scorer: turns judged of how many, failures; and a title with
    the turns done over all rollouts, elapsed and remaining (recomputed at every refresh, so
    the clock moves while a slow judge call is in flight)."""

    columns = ("scorer", "turns judged", "without a score")
    left = frozenset({"scorer"})

    def __init__(self, arm: str | None = None) -> None:
        super().__init__()
        self._tally = _Tally()
        self._arm = f" {arm}" if arm else ""

    def planned(self, rollout: str, turns: int, per_scorer: dict[str, int]) -> None:
        self._tally.plan(turns, per_scorer)

    def turn_scored(self, rollout: str, scorers: list[str], failed: list[str]) -> None:
        self._tally.scored(scorers, failed)

    def rows(self) -> Iterable[Sequence[str]]:
        for name, (done, of, failed) in self._tally.per_scorer.items():
            yield (name, f"{done}/{of}", str(failed))

    def framed(self, table: Table) -> Any:
        from rich.console import Group
        from rich.text import Text

        tally = self._tally
        title = (
            f"loom-sim score{self._arm} · {tally.done}/{tally.turns} turns · "
            f"{clock(tally.elapsed)} elapsed · ~{clock(tally.remaining())} left"
        )
        return Group(Text(title, style="italic"), table)
