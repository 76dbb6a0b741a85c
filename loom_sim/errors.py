"""The exceptions loom-sim raises on purpose.

Every error a user can cause (a bad config, a missing file, a wrong flag) is a ``LoomError``:
the CLI prints its message as one plain line and exits non-zero. Anything else that escapes is
a bug in loom-sim, and the CLI says so instead of pretending it is the user's fault.
"""

from __future__ import annotations


class LoomError(Exception):
    """An error the user can act on. ``str(err)`` is the complete message shown to them."""

    exit_code: int = 1


def describe(exc: BaseException) -> str:
    """One line for a record: a user-facing error as it is, anything else with its type (an
    exception group, each of its errors)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, LoomError) else f"{type(exc).__name__}: {text}"
