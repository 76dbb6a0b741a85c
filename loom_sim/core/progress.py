"""The live progress table a command draws on a terminal while its work runs.

A run's rollouts, a scoring's scorers and a probe's modes each show as a table redrawn four
times a second on stderr from their rows' state (so an elapsed column moves while a slow model
call is in flight). What differs is only the columns and the rows: a subclass names its
columns and gives its rows; the drawing, its refresh and its start and stop are here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["LiveTable"]


class LiveTable:
    """A table of ``columns`` (those in ``left`` justified left, the rest right) whose rows
    :meth:`rows` gives at each redraw; used as a context manager around the work."""

    title: str | None = None
    columns: tuple[str, ...] = ()
    left: frozenset[str] = frozenset()

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._live = Live(self, console=Console(stderr=True), refresh_per_second=4)

    def __enter__(self) -> Self:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()

    def refresh(self) -> None:
        """Redraw now rather than at the next tick (a final state, seen before the exit)."""
        self._live.refresh()

    def rows(self) -> Iterable[Sequence[str]]:
        """The table's rows now: each live table (run, scoring, probe) says its own."""
        raise NotImplementedError

    def framed(self, table: Table) -> Any:
        """What is drawn around the table (a title line above it, say): the table alone."""
        return table

    def __rich__(self) -> Any:
        from rich.table import Table

        table = Table(title=self.title, expand=False)
        for column in self.columns:
            table.add_column(column, justify="left" if column in self.left else "right")
        for row in self.rows():
            table.add_row(*row)
        return self.framed(table)
