"""Progress of a run: a live table on a terminal, plain lines otherwise.

Rollouts report to a :class:`ProgressSink`; they never format output themselves, so the same
run can show a rich table, write CI-friendly lines, or stay silent in tests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Protocol

from loom_sim.core.progress import LiveTable


class ProgressSink(Protocol):
    def rollout_started(self, rollout: str, turns: int, done: int) -> None: ...

    def turn_done(
        self, rollout: str, turn: int, phase: str, tokens: int, cost: float | None, elapsed: float
    ) -> None: ...

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None: ...


class NullProgress:
    def rollout_started(self, rollout: str, turns: int, done: int) -> None:
        pass

    def interrupted(self) -> None:
        pass

    def turn_done(self, rollout, turn, phase, tokens, cost, elapsed) -> None:
        pass

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None:
        pass


def _cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


class PlainProgress:
    """One line per event: for logs, pipes and CI."""

    def __init__(self, stream: IO[str] | None = None):
        self._stream = stream or sys.stderr
        self._turns: dict[str, int] = {}
        self._ended: set[str] = set()

    def _say(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def rollout_started(self, rollout: str, turns: int, done: int) -> None:
        self._turns[rollout] = turns
        resumed = f", resuming after turn {done}" if done else ""
        self._say(f"{rollout}: started ({turns} turns{resumed})")

    def turn_done(self, rollout, turn, phase, tokens, cost, elapsed) -> None:
        total = self._turns.get(rollout, "?")
        self._say(
            f"{rollout}: turn {turn + 1}/{total} · {phase} · {tokens} tokens · "
            f"{_cost(cost)} · {elapsed:.1f}s"
        )

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None:
        self._ended.add(rollout)
        self._say(f"{rollout}: {status}" + (f" ({detail})" if detail else ""))

    def interrupted(self) -> None:
        """Ctrl-C stopped the run: the rollouts still running end here, their turns kept."""
        for rollout in self._turns:
            if rollout not in self._ended:
                self._say(f"{rollout}: interrupted")


def _now() -> float:
    return time.monotonic()  # looked up at each call: tests move the clock


@dataclass
class _Row:
    turns: int
    turn: int = 0
    phase: str = ""
    tokens: int = 0
    cost: float | None = 0.0
    started: float = field(default_factory=_now)
    ended: float | None = None
    status: str = "running"

    @property
    def elapsed(self) -> float:
        """Seconds since the rollout started, moving while it runs (not only at turn ends)."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started


class RichProgress(LiveTable):
    """A live table, one row per rollout: turn k/n, phase, tokens, cost, elapsed, status.

    It is drawn four times a second from the rows' state, so the elapsed column ticks while
    a slow model call is in flight instead of jumping at each turn's end.
    """

    title = "loom-sim run"
    columns = ("rollout", "turn", "phase", "tokens", "cost", "elapsed", "status")
    left = frozenset({"rollout", "turn", "phase", "status"})

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, _Row] = {}

    def rows(self) -> Iterable[Sequence[str]]:
        for name, row in self._rows.items():
            yield (
                name,
                f"{row.turn}/{row.turns}",
                row.phase,
                str(row.tokens),
                _cost(row.cost),
                f"{row.elapsed:.1f}s",
                row.status,
            )

    def rollout_started(self, rollout: str, turns: int, done: int) -> None:
        self._rows[rollout] = _Row(turns=turns, turn=done)

    def turn_done(self, rollout, turn, phase, tokens, cost, elapsed) -> None:
        row = self._rows[rollout]
        row.turn, row.phase, row.tokens, row.cost = turn + 1, phase, tokens, cost

    def rollout_ended(self, rollout: str, status: str, detail: str | None) -> None:
        row = self._rows.setdefault(rollout, _Row(turns=0))
        row.ended = time.monotonic()
        row.status = status if not detail else f"{status}: {detail}"

    def interrupted(self) -> None:
        """Ctrl-C stopped the run: rows still running say so (and stop their clocks)."""
        for row in self._rows.values():
            if row.ended is None:
                row.ended = time.monotonic()
                row.status = "interrupted"
        self.refresh()
