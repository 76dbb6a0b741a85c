"""Ray, as loom-sim uses it: imported only when asked for, and awaited from trio.

Ray's own async story is asyncio (``await ref`` and async actors need an asyncio loop), and
loom-sim's is trio. The two meet in one place, :func:`wait_for`: an ``ObjectRef``'s
``concurrent.futures`` future wakes the trio task through the run's token, so a driver or a
worker waits for Ray without a thread per wait and without blocking its event loop.
"""

from __future__ import annotations

import contextlib
from typing import Any

import trio

from loom_sim.errors import LoomError

__all__ = ["INSTALL_HINT", "import_ray", "wait_for"]

INSTALL_HINT = "--executor ray needs Ray, which is not installed: pip install 'loom-sim[ray]'"


def import_ray() -> Any:
    """The ``ray`` module, or one sentence saying how to install it."""
    try:
        import ray
    except ImportError:
        raise LoomError(INSTALL_HINT) from None
    return ray


async def wait_for(ref: Any) -> Any:
    """The value of a Ray ``ObjectRef`` (or its error, raised as Ray raises it), awaited from
    trio. Cancelling the wait does not cancel the work behind the ref: the caller decides."""
    future = ref.future()
    if not future.done():
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: object) -> None:
            with contextlib.suppress(trio.RunFinishedError):  # the waiter's run has ended
                token.run_sync_soon(done.set)

        future.add_done_callback(wake)
        await done.wait()
    else:
        await trio.lowlevel.checkpoint()
    return future.result()
