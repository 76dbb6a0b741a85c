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

loom-sim's own monitors are registered the same way (``loom_sim.rollout.monitors.builtin``):
repetition, capitulation, stagnation and revelations. Their settings predate
``interaction.monitors`` and stay where configs have always had them
(``interaction.repetition_detection``, ``interaction.anti_capitulation``,
``interaction.stagnation_detection``, the phases' revelations): such a monitor names its section
with ``section``, a function of the config.
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
    config_key: str  # its section under interaction.monitors, or where ``section`` reads
    settings: type[BaseModel] | None = None  # None: the plain switch (enabled)
    # settings kept elsewhere in the config: config -> settings (a LoomConfig; the registry
    # sits below the config's layer, so it is not named here)
    section: Callable[[Any], Any] | None = None

    def settings_in(self, config: Any) -> Any:
        """This monitor's settings in ``config``."""
        if self.section is not None:
            return self.section(config)
        return config.interaction.monitors.of(self.config_key)


MONITORS: Registry[MonitorInfo] = Registry("monitor", "loom_sim.monitors")

C = TypeVar("C", bound=type)


def monitor(
    name: str,
    *,
    order: int = 100,
    summary: str = "",
    config_key: str | None = None,
    settings: type[BaseModel] | None = None,
    section: Callable[[Any], Any] | None = None,
) -> Callable[[C], C]:
    """Register the decorated class as monitor ``name``; ``config_key`` (default ``name``) is
    its section under ``interaction.monitors``, ``settings`` that section's model (a subclass
    of :class:`loom_sim.config.monitors.MonitorSettings`). ``section`` instead reads its
    settings from elsewhere in the config (``config_key`` then names where, for people)."""

    def register(cls: C) -> C:
        MONITORS.add(
            MonitorInfo(
                name=name,
                monitor=cls,
                config_key=config_key or name,
                settings=settings,
                section=section,
                order=order,
                summary=summary,
            )
        )
        return cls

    return register
