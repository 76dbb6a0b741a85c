"""Provider limits across a cluster: one Ray actor holds them, every worker asks it.

A provider's limit (``models.provider_concurrency``, or its default) is a limit of the
*account*: eight workers with a limit of 16 each would send 128 calls at once to an API that
allows 16. So on Ray the limit lives in one place, :class:`ProviderLimits` (an asyncio actor:
a call waiting for a slot is a suspended coroutine, not a thread), and each worker's model
hub gets a :class:`ClusterLimiter` per HTTP provider in place of its ``trio.CapacityLimiter``
(the same surface: ``acquire``, ``release``, ``async with``). Providers that run in the
worker's own process (the embedded model, scripted models) keep their local limits: they
spend the worker's CPU, not an account's quota.

Slots are **leases**, named by their holder (one attempt at one cell) so that none is lost
with a worker: a killed worker cannot release its slots, so when Ray starts a cell's next
attempt, the limits drop every lease of the cell's earlier attempts; an attempt that ends
drops its own (there should be none left). A wait that is cancelled withdraws its request,
and a request that arrives after its withdrawal (the two travel separately) is refused.

The price is one round trip to the actor per model call (about a millisecond on one machine,
a network hop on a cluster), small beside the call it guards.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import trio

from loom_sim.executors.fence import Superseded
from loom_sim.executors.ray_support import wait_for

__all__ = ["ClusterLimiter", "ProviderLimits"]


class ProviderLimits:
    """The Ray actor: calls in flight per provider, across every worker of a run."""

    def __init__(self, limits: dict[str, int] | None = None) -> None:
        self._start(limits or {})

    async def reset(self, limits: dict[str, int]) -> None:
        """A new pass with these limits (every lease of the previous one is forgotten)."""
        self._start(limits)

    def _start(self, limits: dict[str, int]) -> None:
        self._limits = dict(limits)
        self._used: dict[str, int] = dict.fromkeys(limits, 0)
        self._peak: dict[str, int] = dict.fromkeys(limits, 0)
        self._held: dict[str, tuple[str, str]] = {}  # lease -> (provider, holder)
        self._waiting: dict[str, deque[tuple[str, str, asyncio.Future[bool]]]] = {
            p: deque() for p in limits
        }
        self._withdrawn: set[str] = set()
        self._dropped: set[str] = set()

    async def acquire(self, provider: str, holder: str, lease: str) -> bool:
        """True once ``lease`` holds one of ``provider``'s slots; False when its holder or the
        lease itself was given up in the meantime."""
        if holder in self._dropped or lease in self._withdrawn:
            return False
        if provider not in self._limits:
            return True  # not limited here: nothing to hold
        if self._used[provider] < self._limits[provider] and not self._waiting[provider]:
            self._grant(provider, holder, lease)
            return True
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[provider].append((lease, holder, waiter))
        return await waiter

    async def release(self, lease: str) -> None:
        held = self._held.pop(lease, None)
        if held is not None:
            self._used[held[0]] -= 1
            self._wake(held[0])

    async def withdraw(self, lease: str) -> None:
        """The requester stopped waiting: release the slot if it was granted, else leave the
        queue (and refuse the request if it has not arrived yet)."""
        self._withdrawn.add(lease)
        await self.release(lease)
        for queue in self._waiting.values():
            for entry in list(queue):
                if entry[0] == lease:
                    queue.remove(entry)
                    _answer(entry[2], False)

    async def drop(self, holder: str) -> None:
        """Every lease and request of ``holder`` (an attempt that ended or was lost)."""
        self._dropped.add(holder)
        for lease, (_, owner) in list(self._held.items()):
            if owner == holder:
                await self.release(lease)
        for queue in self._waiting.values():
            for entry in list(queue):
                if entry[1] == holder:
                    queue.remove(entry)
                    _answer(entry[2], False)

    async def stats(self) -> dict[str, Any]:
        """Slots in use, the most ever in use, and the limits, by provider."""
        return {"limits": self._limits, "used": dict(self._used), "peak": dict(self._peak)}

    def _grant(self, provider: str, holder: str, lease: str) -> None:
        self._used[provider] += 1
        self._peak[provider] = max(self._peak[provider], self._used[provider])
        self._held[lease] = (provider, holder)

    def _wake(self, provider: str) -> None:
        queue = self._waiting.get(provider)
        while queue and self._used[provider] < self._limits[provider]:
            lease, holder, waiter = queue.popleft()
            if waiter.done():
                continue
            self._grant(provider, holder, lease)
            waiter.set_result(True)


def _answer(waiter: asyncio.Future[bool], granted: bool) -> None:
    if not waiter.done():
        waiter.set_result(granted)


class ClusterLimiter:
    """One provider's limit as a worker sees it: a ``CallLimiter`` whose slots are leases
    from :class:`ProviderLimits`. ``holder`` names the attempt that holds them."""

    def __init__(self, actor: Any, provider: str, holder: str) -> None:
        self._actor = actor
        self._provider = provider
        self._holder = holder
        self._leases: dict[trio.lowlevel.Task, str] = {}
        self._count = 0

    def acquire_nowait(self) -> None:
        raise trio.WouldBlock  # only the actor knows: always ask it

    async def acquire(self) -> None:
        task = trio.lowlevel.current_task()
        if task in self._leases:
            raise RuntimeError("this task already holds a slot of this limiter")
        self._count += 1
        lease = f"{self._holder}/{self._provider}/{self._count}"
        try:
            granted = await wait_for(
                self._actor.acquire.remote(self._provider, self._holder, lease)
            )
        except BaseException:  # cancelled while waiting, or the actor is gone
            self._actor.withdraw.remote(lease)
            raise
        if not granted:
            raise Superseded(
                f"{self._holder}: a newer attempt at this cell has started; this one stops"
            )
        self._leases[task] = lease

    def release(self) -> None:
        lease = self._leases.pop(trio.lowlevel.current_task())
        self._actor.release.remote(lease)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
