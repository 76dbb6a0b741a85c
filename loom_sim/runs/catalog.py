"""Every run in a results folder, newest first: what ``loom-sim runs`` lists and the viewer's
first page shows.

A run is a folder holding a ``run.json``, directly in the results folder or one level down
(folders grouping runs); a matrix's arms are part of their matrix, not runs of their own. A
folder that cannot be read is listed as ``unreadable`` with the reason, never skipped silently
and never fatal: one broken run must not hide the others.

Status, over the run's cells: ``complete`` when every one is done; ``failed`` when one ended
in error (resumable: ``run --resume`` continues it); ``partial`` otherwise — some cell has not
finished, because the run is still going or was interrupted (resumable too). ``running``
says a process holds the run folder's lock (:mod:`loom_sim.core.lock`): it is being written
now, so it is not resumable until that process ends. ``active`` says a file of the run changed
in the last :data:`ACTIVE_WITHIN` seconds.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loom_sim.core.lock import holder
from loom_sim.errors import LoomError
from loom_sim.runs.load import RunResults, load_results
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.run_file import RUN_FILE

__all__ = ["ACTIVE_WITHIN", "STATUSES", "RunSummary", "find_runs", "parse_since", "summarise_run"]

ACTIVE_WITHIN = 30.0
STATUSES = ("complete", "partial", "failed", "unreadable")


@dataclass(frozen=True)
class RunSummary:
    dir: Path
    path: str  # relative to the results folder: what the viewer's links use
    kind: str  # run | matrix | ? (unreadable)
    created_at: str
    configs: list[str]
    targets: list[str]
    cells: int
    done: int
    failed: int
    turns: int  # completed turns over every cell
    planned_turns: int
    cost_usd: float | None  # None: some cost unknown
    status: str
    last_activity: float  # the newest mtime among its files (epoch seconds)
    scored: bool
    problem: str | None = None
    judges: list[str] = field(default_factory=list)
    holder: int | None = None  # the pid of the process writing the run now

    @property
    def running(self) -> bool:
        return self.holder is not None

    @property
    def name(self) -> str:
        return self.dir.name

    def active(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return self.status == "partial" and now - self.last_activity < ACTIVE_WITHIN

    @property
    def resumable(self) -> bool:
        return self.status in ("partial", "failed") and not self.running

    def to_dict(self) -> dict[str, Any]:
        return {
            "dir": str(self.dir),
            "path": self.path,
            "kind": self.kind,
            "created_at": self.created_at,
            "configs": self.configs,
            "targets": self.targets,
            "cells": self.cells,
            "done": self.done,
            "failed": self.failed,
            "turns": self.turns,
            "planned_turns": self.planned_turns,
            "cost_usd": self.cost_usd,
            "status": self.status,
            "active": self.active(),
            "running": self.running,
            "pid": self.holder,
            "scored": self.scored,
            "judges": self.judges,
            "problem": self.problem,
        }


def _mtime(results: RunResults) -> float:
    newest = 0.0
    for rollout in results.rollouts:
        for name in (TURNS_FILE, TRANSCRIPT_FILE):
            path = rollout.dir / name
            try:
                newest = max(newest, path.stat().st_mtime)
            except OSError:
                continue
    try:
        newest = max(newest, (results.dir / RUN_FILE).stat().st_mtime)
    except OSError:
        pass
    return newest


def summarise_run(run_dir: Path, root: Path | None = None) -> RunSummary:
    """One run's line; an unreadable run is a line saying why, not an exception. With
    ``root``, a run with a link leading outside it is unreadable (nothing is read through it).
    """
    rel = str(run_dir.relative_to(root)) if root is not None else run_dir.name
    try:
        results = load_results(run_dir, within=root)
    except LoomError as err:
        try:
            mtime = (run_dir / RUN_FILE).lstat().st_mtime
        except OSError:
            mtime = 0.0
        return RunSummary(
            run_dir, rel, "?", "", [], [], 0, 0, 0, 0, 0, None, "unreadable", mtime, False,
            str(err), holder=holder(run_dir),
        )  # fmt: skip
    rollouts = results.rollouts
    done = sum(1 for r in rollouts if r.status == "done")
    failed = sum(1 for r in rollouts if r.status == "error")
    costs = [r.transcript.cost_usd for r in rollouts if r.transcript.turns]
    cost = None if any(c is None for c in costs) else round(sum(costs), 6)  # type: ignore[arg-type]
    status = "complete" if done == results.cells else "failed" if failed else "partial"
    judges = sorted(
        {r.transcript.scores.judge for r in rollouts if r.transcript.scores is not None}
    )
    return RunSummary(
        dir=run_dir,
        path=rel,
        kind=results.kind,
        created_at=results.created_at,
        configs=results.configs,
        targets=results.targets,
        cells=results.cells,
        done=done,
        failed=failed,
        turns=sum(len(r.transcript.turns) for r in rollouts),
        planned_turns=results.planned_turns,
        cost_usd=cost,
        status=status,
        last_activity=_mtime(results),
        scored=any(record.scores for r in rollouts for record in r.transcript.turns),
        judges=judges,
        holder=holder(run_dir),
    )


def _run_dirs(root: Path) -> list[Path]:
    """Run folders in ``root`` and one level down; a link leading outside ``root`` is not
    followed (the viewer serves nothing outside its folder, so it lists nothing there). A
    ``run.json`` of any kind counts — a folder, a FIFO or a link to a device is a run listed
    as unreadable, not skipped — and a run reached twice (a link to it, a loop of links) is
    listed once, under its own path when it has one."""
    base = root.resolve()

    def inside(path: Path) -> bool:
        try:
            return path.is_dir() and path.resolve().is_relative_to(base)
        except (OSError, RuntimeError):  # a loop of links
            return False

    def holds_run(path: Path) -> bool:
        return os.path.lexists(path / RUN_FILE)

    found = []
    for child in sorted(p for p in root.iterdir() if not p.name.startswith(".") and inside(p)):
        if holds_run(child):
            found.append(child)
            continue
        try:
            grouped = sorted(child.iterdir())
        except OSError:
            continue
        found += [g for g in grouped if inside(g) and holds_run(g)]
    by_real: dict[Path, Path] = {}
    for path in sorted(found, key=lambda p: (p.resolve() != base / p.relative_to(root), p)):
        by_real.setdefault(path.resolve(), path)
    return sorted(by_real.values())


def parse_since(text: str) -> str:
    """``--since``: an ISO date or time (compared with each run's creation time, which is
    ISO), checked so that a word like ``yesterday`` is refused rather than matching nothing."""
    try:
        datetime.fromisoformat(text.strip())
    except ValueError:
        raise LoomError(
            f"--since {text!r}: give an ISO date or time, e.g. 2025-06-01 or 2025-06-01T14:30"
        ) from None
    return text.strip()


def find_runs(
    root: Path,
    *,
    config: str | None = None,
    target: str | None = None,
    status: str | None = None,
    since: str | None = None,
) -> list[RunSummary]:
    """The runs under ``root``, newest first, keeping those matching every filter given
    (``config`` and ``target``: a substring of one of the run's; ``since``: an ISO date or
    time, compared with the run's creation time)."""
    if not root.is_dir():
        raise LoomError(f"{root}: no such results folder")
    if since:
        since = parse_since(since)
    runs = [summarise_run(d, root) for d in _run_dirs(root)]
    if config:
        runs = [r for r in runs if any(config.lower() in c.lower() for c in r.configs)]
    if target:
        runs = [r for r in runs if any(target.lower() in t.lower() for t in r.targets)]
    if status:
        runs = [r for r in runs if r.status == status]
    if since:
        runs = [r for r in runs if r.created_at >= since]
    return sorted(runs, key=lambda r: (r.created_at, r.last_activity, r.path), reverse=True)
