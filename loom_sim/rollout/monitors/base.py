"""What a rollout monitor is: a check of each persona draft before the interlocutor sees it.

A monitor a maintainer or a package adds is a :class:`Monitor` subclass in its own module,
registered with :func:`loom_sim.plugins.monitors.monitor` (and, for a package, declared in the
``loom_sim.monitors`` entry-point group). Its settings are a section of the persona config
under ``interaction.monitors``. Nothing else is edited: the monitor actor asks every enabled
registered monitor about every draft, a finding rejects the draft (the persona is asked again
with the finding's instruction, up to ``repetition_detection.max_retries`` times), and the
turn records a monitor event naming the monitor, the pattern and the detail — what the draft
said, not what the monitor intended.

A monitor is built once per rollout and hears every committed exchange (``observe``), so it
may keep a window of its own; on resume it is rebuilt and hears the completed turns again, in
order, before the first new draft.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loom_sim.plugins.monitors import MONITORS

if TYPE_CHECKING:
    from loom_sim.config.monitors import MonitorSettings
    from loom_sim.config.spec import LoomConfig

__all__ = ["Draft", "Finding", "Monitor", "Monitors"]


@dataclass(frozen=True)
class Finding:
    """Why a draft is rejected: a stable ``pattern`` for counting, a ``detail`` for people
    (what the draft says), and the ``instruction`` the persona is re-asked with (empty: a
    plain request for a different message, naming the detail)."""

    pattern: str  # "banned:<text>", "regex:<pattern>", "capitulation:<phrase>" or a structure
    detail: str
    monitor: str = "repetition"  # or "capitulation", or a registered monitor's name
    instruction: str = ""


@dataclass(frozen=True)
class Draft:
    """A persona draft as a monitor sees it."""

    turn: int  # counted from 0
    attempt: int  # 0 for the first draft of the turn, then each re-prompt
    text: str
    previous: tuple[str, ...]  # the persona's committed messages before it, oldest first


class Monitor:
    """Base of a registered monitor: built once per rollout from its settings section and the
    run's config. Subclasses implement :meth:`check`; :meth:`observe` is optional."""

    def __init__(self, settings: MonitorSettings, config: LoomConfig) -> None:
        self.settings = settings
        self.config = config

    async def check(self, draft: Draft) -> list[Finding]:
        """What is wrong with ``draft`` (nothing: an empty list). Async, so a monitor may ask
        a model or a service; it runs inside the rollout's turn, so keep it quick."""
        raise NotImplementedError(f"{type(self).__name__} must implement check()")

    def observe(self, turn: int, persona: str, interlocutor: str) -> None:
        """A committed exchange (the persona's sent message and the reply), in turn order."""


class Monitors:
    """The enabled registered monitors of one rollout, asked in registry order."""

    def __init__(self, config: LoomConfig, committed: Sequence[tuple[int, str, str]] = ()):
        spec = config.interaction.monitors
        self._running: list[tuple[str, Monitor]] = []
        for info in MONITORS:
            settings = spec.of(info.config_key)
            if settings.enabled:
                self._running.append((info.name, info.monitor(settings, config)))
        self._previous: list[str] = []
        for turn, persona, interlocutor in committed:  # a resumed rollout's completed turns
            self.observe(turn, persona, interlocutor)

    def __bool__(self) -> bool:
        return bool(self._running)

    async def check(self, turn: int, attempt: int, text: str) -> list[Finding]:
        """Every monitor's findings on a draft, each named for the monitor that made it."""
        if not self._running:  # nothing registered: no draft to build
            return []
        draft = Draft(turn=turn, attempt=attempt, text=text, previous=tuple(self._previous))
        findings: list[Finding] = []
        for name, monitor in self._running:
            found = await monitor.check(draft)
            findings += [dataclasses.replace(f, monitor=name) for f in found]
        return findings

    def observe(self, turn: int, persona: str, interlocutor: str) -> None:
        self._previous.append(persona)
        for _, monitor in self._running:
            monitor.observe(turn, persona, interlocutor)
