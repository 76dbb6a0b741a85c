"""The console that shows recorded text: nothing in it can act on the reader's terminal.

``view`` and ``trace`` print what programs and models wrote: a target's replies, a persona's
messages, a debater's. Rich escapes markup but passes C1 controls (``\\x9d…\\x9c`` is an OSC
string: OSC 52 sets the clipboard) and bidi overrides through, so everything this console
writes — to the terminal or to the pager — goes through :func:`~loom_sim.core.text.printable`
last. Rich's own styling is 7-bit escape sequences, which it leaves alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

from loom_sim.core.text import printable


class SafeConsole(Console):
    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return printable(super()._render_buffer(buffer))


def safe_console(**options: Any) -> Console:
    return SafeConsole(**options)


#: Wide enough for any table loom-sim prints; rich sizes a table to its content, not this.
PIPED_WIDTH = 100_000


def table_console(**options: Any) -> Console:
    """The console for tables on stdout: the terminal's width on a terminal; when stdout is a
    pipe or a file, no width at all, so ``loom-sim runs | grep`` sees whole rows (rich would
    otherwise cut them at 80 columns for a reader that has none). A width asked for with
    ``COLUMNS`` is kept: whoever sets it on a pipe wants that width."""
    console = Console(**options)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=PIPED_WIDTH, **options)
    return console
