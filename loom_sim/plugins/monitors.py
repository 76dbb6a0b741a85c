"""Rollout monitors: checks of each persona draft before the interlocutor sees it.

A monitor is a class with ``async def check(self, draft) -> list[Finding]`` (see
:mod:`loom_sim.rollout.monitors.base`), registered where it is defined::

    @monitor("no_shouting", order=50, summary="rejects drafts written in capitals",
             settings=NoShoutingSettings)
    class NoShouting(Monitor): ...

From here come the config's ``interaction.monitors`` keys and their settings (validated, in
the JSON Schema), the monitor actor's list of checks and ``loom-sim plugins``. A finding rejects
the draft: the persona is asked again (up to ``repetition_detection.max_retries`` times) with
the finding's instruction, and the turn records the event.

The checks loom-sim has always had (the repetition guard, capitulation phrases, stagnation and
convergence, revelations) keep their own sections (``interaction.repetition_detection``,
``interaction.stagnation_detection``...) and run in the monitor actor itself; this registry is
where every further monitor goes, loom-sim's or a package's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from loom_sim.plugins import Plugin, Registry

__all__ = ["MONITORS", "MonitorInfo", "monitor"]


@dataclass(frozen=True, kw_only=True)
class MonitorInfo(Plugin):
    monitor: Callable[..., Any]  # the class: monitor(settings, config) -> a Monitor
    config_key: str  # its section under interaction.monitors
    settings: type[BaseModel] | None = None  # None: the plain switch (enabled)


MONITORS: Registry[MonitorInfo] = Registry("monitor", "loom_sim.monitors")

C = TypeVar("C", bound=type)


def monitor(
    name: str,
    *,
    order: int = 100,
    summary: str = "",
    config_key: str | None = None,
    settings: type[BaseModel] | None = None,
) -> Callable[[C], C]:
    """Register the decorated class as monitor ``name``; ``config_key`` (default ``name``) is
    its section under ``interaction.monitors``, ``settings`` that section's model (a subclass
    of :class:`loom_sim.config.monitors.MonitorSettings`)."""

    def register(cls: C) -> C:
        MONITORS.add(
            MonitorInfo(
                name=name,
                monitor=cls,
                config_key=config_key or name,
                settings=settings,
                order=order,
                summary=summary,
            )
        )
        return cls

    return register
