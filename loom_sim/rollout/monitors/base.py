"""What a rollout monitor is: a check of each persona draft before the interlocutor sees it.

Every monitor — loom-sim's own (repetition, capitulation, stagnation, revelations, in
:mod:`loom_sim.rollout.monitors.builtin`) and any a package adds — is a :class:`Monitor`
subclass in its own module, registered with :func:`loom_sim.plugins.monitors.monitor` (for a
package, declared in the ``loom_sim.monitors`` entry-point group). The monitor actor asks every
enabled registered monitor about every draft through :class:`Monitors`, and knows none of them:

* :meth:`Monitor.check` — a finding rejects the draft: the persona is asked again (up to
  ``repetition_detection.max_retries`` times) with the instruction the monitor writes for its
  findings (:meth:`Monitor.instruction`), and the turn records a monitor event naming the
  monitor, the pattern and the detail — what the draft said, not what the monitor intended;
* :meth:`Monitor.redirect` — a monitor may instead redirect the conversation (the stagnation
  monitor's emergency redirect, when sending the draft would continue a loop);
* :meth:`Monitor.observe` — each committed exchange, in turn order; what it returns (the
  revelations a message made, with their evidence) goes into the turn's record;
* :meth:`Monitor.wants` and :meth:`Monitor.lasting` — the texts whose vectors it will ask the
  embedding service for, so that one request per draft serves every monitor.

A monitor is built once per rollout (its settings, the run's config, then :meth:`Monitor.attach`
with the rollout's :class:`~loom_sim.rollout.monitors.context.MonitorContext`); on resume it is
rebuilt and :meth:`Monitor.resume` hears the completed turns again, in order, before the first
new draft.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loom_sim.models.base import Usage
from loom_sim.plugins.monitors import MONITORS
from loom_sim.store.turn_parts import MonitorEvent, RevelationEvidence

if TYPE_CHECKING:
    from loom_sim.config.spec import LoomConfig
    from loom_sim.rollout.monitors.context import MonitorContext
    from loom_sim.store.records import TurnRecord

__all__ = ["Draft", "Finding", "Monitor", "Monitors", "Observed", "Redirect"]


@dataclass(frozen=True)
class Finding:
    """Why a draft is rejected: a stable ``pattern`` for counting, a ``detail`` for people
    (what the draft says), and the ``instruction`` the persona is re-asked with (empty: a
    plain request for a different message, naming the detail)."""

    pattern: str  # "banned:<text>", "regex:<pattern>", "capitulation:<phrase>" or a structure
    detail: str
    monitor: str = "repetition"  # set to the name of the monitor that found it
    instruction: str = ""


@dataclass(frozen=True)
class Draft:
    """A persona draft as a monitor sees it."""

    turn: int  # counted from 0
    attempt: int  # 0 for the first draft of the turn, then each re-prompt
    text: str
    previous: tuple[str, ...]  # the persona's committed messages before it, oldest first
    phase_index: int = 0  # the trajectory's phase at this turn
    intensities: Mapping[str, float] = field(default_factory=dict)  # each dimension's, now


@dataclass(frozen=True)
class Redirect:
    """A redirect instead of a plain re-prompt: the text the persona is re-asked with, the
    events that record why, and the revelations it offers (used from now on)."""

    text: str
    events: list[MonitorEvent]
    offered: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Observed:
    """What a monitor found in a committed exchange: the revelations the persona's message
    made (with their evidence), and what any model call it made used."""

    revealed: list[RevelationEvidence] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


class Monitor:
    """Base of a registered monitor: built once per rollout from its settings and the run's
    config. Subclasses implement :meth:`check` (or :meth:`redirect`); the rest is optional."""

    context: MonitorContext | None = None

    def __init__(self, settings: Any, config: LoomConfig) -> None:
        self.settings = settings
        self.config = config

    def attach(self, context: MonitorContext) -> None:
        """The rollout's shared context: its embedding vectors, the judge, the revelations
        made and offered so far. Called once, after construction."""
        self.context = context

    def resume(self, records: Sequence[TurnRecord]) -> None:
        """A resumed rollout's completed turns, in order, before its first new draft. By
        default each is observed again (so a window of its own is rebuilt)."""
        for record in records:
            self.observe(record.turn, record.persona, record.interlocutor)

    def lasting(self) -> list[str]:
        """Texts whose vectors it compares with throughout the rollout (the config's own)."""
        return []

    def wants(self, draft: Draft) -> list[str]:
        """The texts whose vectors its check of ``draft``, and its observation if the draft is
        sent, will ask for: they are asked for in one request with every monitor's."""
        return []

    async def check(self, draft: Draft) -> list[Finding]:
        """What is wrong with ``draft`` (nothing: an empty list). Async, so a monitor may ask
        a model or a service; it runs inside the rollout's turn, so keep it quick."""
        return []

    def instruction(self, findings: Sequence[Finding]) -> str:
        """The re-prompt for this monitor's ``findings`` on a draft: each finding's own
        instruction, else a plain request naming its detail."""
        return "\n".join(
            finding.instruction
            or f"[Your draft was rejected: it {finding.detail}. Write a different message, "
            "in character.]"
            for finding in findings
        )

    async def redirect(self, draft: Draft) -> Redirect | None:
        """A redirect that sending ``draft`` would call for (None: none)."""
        return None

    def observe(self, turn: int, persona: str, interlocutor: str) -> Any:
        """A committed exchange (the persona's sent message and the reply), in turn order.
        May be a coroutine; an :class:`Observed` it returns goes into the turn's record."""
        return None


@dataclass
class Checked:
    """Every monitor's word on one draft: the findings (each named for its monitor), the
    re-prompt they call for, and a redirect's text, events and offers."""

    findings: list[Finding]
    vary: str | None
    redirect: str | None
    events: list[MonitorEvent]
    offered: list[str]

    @property
    def accepted(self) -> bool:
        return not self.findings and self.redirect is None


class Monitors:
    """The enabled registered monitors of one rollout, asked in registry order."""

    def __init__(
        self,
        config: LoomConfig,
        context: MonitorContext | None = None,
        records: Sequence[TurnRecord] = (),
    ):
        self._running: list[tuple[str, Monitor]] = []
        self._context = context
        for info in MONITORS:
            settings = info.settings_in(config)
            if getattr(settings, "enabled", True):
                built: Monitor = info.monitor(settings, config)
                if context is not None:
                    built.attach(context)
                self._running.append((info.name, built))
        self._previous: list[str] = [r.persona for r in records]
        for _, running in self._running:  # a resumed rollout's completed turns
            running.resume(records)

    def __bool__(self) -> bool:
        return bool(self._running)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._running]

    def lasting(self) -> list[str]:
        return [text for _, running in self._running for text in running.lasting()]

    async def check(
        self,
        turn: int,
        attempt: int,
        text: str,
        *,
        phase_index: int = 0,
        intensities: Mapping[str, float] | None = None,
    ) -> Checked:
        """Every monitor's word on a draft: first the vectors they all want, in one request;
        then each one's findings and redirect, in registry order."""
        draft = Draft(
            turn=turn,
            attempt=attempt,
            text=text,
            previous=tuple(self._previous),
            phase_index=phase_index,
            intensities=dict(intensities or {}),
        )
        vectors = self._context.live_vectors if self._context is not None else None
        if vectors is not None:
            await vectors([t for _, m in self._running for t in m.wants(draft)])
        findings: list[Finding] = []
        parts: list[str] = []
        for name, running in self._running:
            found = [dataclasses.replace(f, monitor=name) for f in await running.check(draft)]
            findings += found
            if found:
                parts.append(running.instruction(found))
        events = [
            MonitorEvent(
                monitor=finding.monitor,
                pattern=finding.pattern,
                action="rejected",
                detail=finding.detail,
                attempt=attempt,
            )
            for finding in findings
        ]
        redirect, offered = None, []
        for _, running in self._running:
            given = await running.redirect(draft)
            if given is not None:
                redirect, offered = given.text, given.offered
                events += given.events
                break
        vary = "\n".join(p for p in parts if p) if findings else None
        return Checked(findings, vary, redirect, events, offered)

    async def observe(self, turn: int, persona: str, interlocutor: str) -> Observed:
        """A committed exchange, told to every monitor in order; what they found in it."""
        self._previous.append(persona)
        revealed: list[RevelationEvidence] = []
        usage = Usage()
        for _, running in self._running:
            result = running.observe(turn, persona, interlocutor)
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, Observed):
                revealed += result.revealed
                usage = usage + result.usage
        if self._context is not None:
            self._context.end_turn()
        return Observed(revealed, usage)
