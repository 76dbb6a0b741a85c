"""The exceptions loom-sim raises on purpose.

Every error a user can cause (a bad config, a missing file, a wrong flag) is a ``LoomError``:
the CLI prints its message as one plain line and exits non-zero. Anything else that escapes is
a bug in loom-sim, and the CLI says so instead of pretending it is the user's fault.
"""

from __future__ import annotations

from loom_sim.redaction import redact

#: The longest error text a record or a terminal line carries; the rest is cut with a note
#: saying where the whole is (a repr of a token list runs to megabytes).
MESSAGE_LIMIT = 400


class LoomError(Exception):
    """An error the user can act on. ``str(err)`` is the complete message shown to them."""

    exit_code: int = 1


def describe(exc: BaseException, *, limit: int | None = None) -> str:
    """One line for a record: a user-facing error as it is, anything else with its type (an
    exception group, each of its errors); redacted (:mod:`loom_sim.redaction`), and cut to
    ``limit`` characters when one is given."""
    if isinstance(exc, BaseExceptionGroup):  # each error once, however often it was raised
        return "; ".join(dict.fromkeys(describe(e, limit=limit) for e in exc.exceptions))
    text = str(exc) or type(exc).__name__
    text = text if isinstance(exc, LoomError) else f"{type(exc).__name__}: {text}"
    text = redact(text)
    return bounded(text, limit) if limit is not None else text


def bounded(text: str, limit: int = MESSAGE_LIMIT, *, rest: str | None = None) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was cut and, when
    ``rest`` names it, where the whole text is."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    where = f"; all of it in {rest}" if rest else ""
    return f"{text[:limit]}… [{cut:,} more characters{where}]"
