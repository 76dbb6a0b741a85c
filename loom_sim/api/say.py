"""How the pipeline speaks: one callable that takes a line and where it goes.

The command line passes ``click.echo``'s shape (``err=True``: the log on stderr, else the
results on stdout); the Python API passes a printer or a silent one. The pipeline itself never
prints, so the same code serves a terminal, a notebook and a test.
"""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from loom_sim.models.cache import ResponseCache, default_cache_path


class Say(Protocol):
    def __call__(self, message: str, *, err: bool = False) -> None: ...


def printed(message: str, *, err: bool = False) -> None:
    """Say it on the process's stdout or stderr (what a notebook shows under the cell)."""
    print(message, file=sys.stderr if err else sys.stdout, flush=True)


def silent(message: str, *, err: bool = False) -> None:
    """Say nothing: for callers that read the results from the returned objects."""


@contextmanager
def open_cache(enabled: bool, say: Say) -> Iterator[ResponseCache | None]:
    """The response cache when ``enabled``; on the way out, one line saying what it did."""
    if not enabled:
        yield None
        return
    cache = ResponseCache(default_cache_path())
    try:
        yield cache
    finally:
        if cache.hits or cache.stored:
            say(
                f"response cache: {cache.hits} replies reused, {cache.stored} stored "
                f"({cache.path})",
                err=True,
            )
        if cache.problem:
            say(f"note: {cache.problem}; the rest ran without it", err=True)
        if cache.read_only:
            say(
                f"note: {cache.path} is read-only: replies were served from it, none stored",
                err=True,
            )
        cache.close()


def say_headline(run_dir: Path, say: Say) -> None:
    """The run's headline table (the model under evaluation's scores, the persona's, flags;
    for a matrix the comparison), said after its report: a run ends with its answer, as
    ``inspect eval`` ends with its metrics. Rendered here, said as text, so a silent caller
    stays silent. Not on a terminal it keeps its full width: a log or a pipe is not cut."""
    from rich.console import Console

    from loom_sim.compare.headline import headline

    table = headline(run_dir)
    if table is None:
        return
    tty = sys.stdout.isatty()
    width = shutil.get_terminal_size().columns if tty else 200
    console = Console(file=io.StringIO(), width=width, force_terminal=tty)
    console.print(table)
    say(console.file.getvalue().rstrip("\n"))  # type: ignore[attr-defined]
