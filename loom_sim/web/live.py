"""Server-sent events: a page of a run that is still going updates itself.

The stream watches the run's files (each rollout's ``turns.jsonl`` and ``transcript.json``,
the run's ``run.json``): whenever what it sees changes, it sends ``update`` with the run's
turns and status, and the page fetches itself again. When the run has nothing left to do
(every cell done or in error) it sends ``done`` and ends; the page then stops listening, so a
finished run costs nothing. A stream also ends after ``lifetime`` seconds (the browser
reconnects by itself) so no connection is held forever.

Watching is polling: a ``stat`` per file every ``poll_s`` seconds is cheap at these sizes and
works the same on every filesystem, where inotify-style watchers do not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from loom_sim.errors import LoomError
from loom_sim.runs.catalog import summarise_run
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.run_file import RUN_FILE

__all__ = ["events", "signature", "token"]

KEEPALIVE_S = 15.0


def signature(run_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a run makes progress: the size and mtime of its files."""
    found = []
    for pattern in (RUN_FILE, f"**/{TURNS_FILE}", f"**/{TRANSCRIPT_FILE}"):
        for path in sorted(run_dir.glob(pattern)):
            try:
                stat = path.stat()
            except OSError:
                continue
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def token(run_dir: Path) -> str:
    """A short digest of :func:`signature`: a page says which state it shows (``?since=``), so
    a change made between rendering the page and opening its stream is not missed."""
    return hashlib.sha1(repr(signature(run_dir)).encode()).hexdigest()[:16]


def _event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


async def _inline(work: Callable[[], Any]) -> Any:
    return work()


def _state(run_dir: Path) -> dict:
    try:
        summary = summarise_run(run_dir)
    except LoomError as err:  # summarise_run reports problems, but a folder can vanish
        return {"status": "unreadable", "turns": 0, "done": 0, "cells": 0, "problem": str(err)}
    return {
        "status": summary.status,
        "turns": summary.turns,
        "done": summary.done,
        "cells": summary.cells,
    }


async def events(
    run_dir: Path,
    *,
    since: str | None = None,
    poll_s: float = 1.0,
    lifetime: float = 600.0,
    off_loop: Callable[[Callable[[], Any]], Awaitable[Any]] = _inline,
) -> AsyncIterator[str]:
    """The event stream of one run: ``update`` on every change (and at once when the run has
    changed since the page's ``since`` token), ``done`` when finished. ``off_loop`` runs the
    reading of the disk (the viewer: in a worker thread, so a large run holds nothing up)."""
    yield "retry: 2000\n\n"
    seen = await off_loop(partial(signature, run_dir))
    state = await off_loop(partial(_state, run_dir))
    yield _event("status", state)
    if since is not None and since != hashlib.sha1(repr(seen).encode()).hexdigest()[:16]:
        yield _event("update", state)
    waited = quiet = 0.0
    while state["status"] == "partial" and waited < lifetime:
        await anyio.sleep(poll_s)
        waited += poll_s
        quiet += poll_s
        now = await off_loop(partial(signature, run_dir))
        if now != seen:
            seen, state, quiet = now, await off_loop(partial(_state, run_dir)), 0.0
            yield _event("update", state)
        elif quiet >= KEEPALIVE_S:  # a comment line: keeps proxies from closing the stream
            quiet = 0.0
            yield ": still watching\n\n"
    if state["status"] != "partial":
        yield _event("done", state)
