"""The coordinator: one small Ray actor per run that every worker reports to.

It keeps what a run's units of work share across machines and nothing else:

* **attempts** — each unit announces itself when it starts; the second start of a cell is a
  retry (Ray re-ran it after its worker or node was lost), which the run counts in
  ``run.json`` and shows in the live table;
* **money** — every model call's cost, as it returns, so ``--max-cost`` holds for the whole
  cluster. A retried cell restarts from its recorded turns, which re-charge what they cost
  (the ledger's ``restore``), so the lost attempt's charges are dropped when the retry starts:
  nothing is counted twice;
* **progress** — the rollouts' events (started, turn done, ended), queued for the driver to
  drain into the one live table.

A synchronous actor on purpose: Ray runs a synchronous actor's calls from one caller in the
order they were sent, so a worker's progress events arrive in order and a call that returns
proves every earlier one from that worker has been applied. Every method is short and never
waits, so one thread serves the whole cluster.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Coordinator", "Event"]

#: ("started", label, turns, done) | ("turn", label, turn, phase, tokens, cost, elapsed)
#: | ("ended", label, status, detail) | ("retried", label, attempt, node)
Event = tuple[Any, ...]


class Coordinator:
    def __init__(self) -> None:
        self.begin(time.time())

    def begin(self, started: float) -> None:
        """A new pass (the rollouts, then their scoring): counters start again."""
        self.started = started
        self._attempts: dict[str, int] = {}
        self._cost: dict[str, float] = {}  # the current attempt's charges, per cell
        self._total = 0.0
        self._events: list[Event] = []

    # ─── workers ────────────────────────────────────────────────────────────

    def attempt_started(self, cell: str, node: str) -> tuple[int, float]:
        """Cell ``cell`` starts on ``node``: its attempt number, and the run's spending so
        far (what the worker's budget starts from)."""
        attempt = self._attempts.get(cell, 0) + 1
        self._attempts[cell] = attempt
        if attempt > 1:
            self._total -= self._cost.get(cell, 0.0)
            self._events.append(("retried", cell, attempt, node))
        self._cost[cell] = 0.0
        return attempt, self._total

    def charge(self, cell: str, attempt: int, usd: float) -> float:
        """A call of ``cell`` cost ``usd``: the run's total since the pass began. Charges of an
        attempt that has been superseded are not counted."""
        if self._attempts.get(cell) == attempt:
            self._cost[cell] = self._cost.get(cell, 0.0) + usd
            self._total += usd
        return self._total

    def report(self, event: Event) -> None:
        self._events.append(event)

    def attempt_ended(self, cell: str, attempt: int) -> None:
        """The last call of an attempt: when it returns, the attempt's events are queued."""

    # ─── the driver ─────────────────────────────────────────────────────────

    def drain(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def attempts(self) -> dict[str, int]:
        return dict(self._attempts)

    def total(self) -> float:
        return self._total
