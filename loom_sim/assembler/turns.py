"""The assembler: config x turn -> everything the persona is given at that turn.

It combines the intensity resolver, the phase schedule, the injection scheduler and the prompt
builder. It has no randomness and no I/O: the same config and turn always give the same plan,
which is what makes ``dry-run``, golden tests and resumed runs trustworthy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Literal

import msgspec

from loom_sim.assembler.injection import InjectionKind, InjectionScheduler
from loom_sim.assembler.intensity import IntensityResolver, level_of
from loom_sim.assembler.phases import PhaseSchedule
from loom_sim.assembler.prompt_builder import PromptBlocks, PromptBuilder, RevelationChoice
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.config.spec import LoomConfig, TrajectoryMode
from loom_sim.errors import LoomError


class TurnPlan(msgspec.Struct, frozen=True):
    """What the assembler prescribes for one turn (0-based)."""

    turn: int
    turns: int | None
    progress: float
    phase: str
    phase_index: int
    intensities: dict[str, float]
    levels: dict[str, str | None]
    injection: str  # an InjectionKind value
    prompt: PromptBlocks | None  # None when asked for without it (a non-injection turn in a run)
    reminder: str | None
    revelations: list[RevelationChoice]
    response_length: str
    template_version: str = TEMPLATE_VERSION
    emergency: str | None = None  # a monitor's intervention, scheduled for this turn


class Assembler:
    """Builds the :class:`TurnPlan` of any turn of a conversation of ``turns`` turns.

    In ``fixed_length`` mode the trajectory stretches to the conversation: ``turns`` (default
    ``expected_turns``) is also the horizon curves and percentage phases are measured on. In the
    other modes the horizon stays ``expected_turns`` and ``turns`` only limits the length.
    """

    def __init__(self, config: LoomConfig, turns: int | None = None):
        trajectory = config.trajectory
        if turns is not None and turns < 1:
            raise LoomError(f"the number of turns must be at least 1, got {turns}")
        self.config = config
        self.turns = turns if turns is not None else trajectory.expected_turns
        horizon = (
            self.turns
            if trajectory.mode is TrajectoryMode.FIXED_LENGTH
            else trajectory.expected_turns
        )
        self.intensity = IntensityResolver(config, horizon)
        self.phases = PhaseSchedule(config, horizon)
        self.injections = InjectionScheduler(config.interaction.injection)
        self.builder = PromptBuilder.for_config(config)

    def plan(
        self,
        turn: int,
        fired: Mapping[str, int] | None = None,
        *,
        prompt: Literal["always", "injected"] = "always",
        emergency: str | None = None,
        revealed: Collection[str] = (),
        refresh: bool = False,
    ) -> TurnPlan:
        """The plan for ``turn``; ``fired`` maps trigger phases to the turn their condition held.

        ``prompt="injected"`` renders the three blocks only on full-injection turns, the only
        turns that send them (a run); ``"always"`` renders them every turn (dry-run, goldens).
        ``emergency`` is an intervention a monitor scheduled for this turn; it travels with the
        plan to the persona, after the history, whatever the injection kind. ``revealed`` are
        the topics the persona has already revealed: they are not offered again. ``refresh``
        forces a full injection (the prompt in force offers something since revealed).
        """
        phase = self.phases.at(turn, fired)
        intensities = self.intensity.resolve(turn)
        dims = self.config.trajectory.dimensions
        phase_starts = phase.start == turn
        injection = self.injections.kind(turn, phase_starts=phase_starts, refresh=refresh)
        revelations = self.builder.revelations(phase, intensities, revealed)
        blocks = None
        if prompt == "always" or injection is not InjectionKind.NONE:
            blocks = self.builder.build(
                turn=turn,
                turns=self.turns,
                phase=phase,
                intensities=intensities,
                revelations=revelations,
            )
        reminder = None
        if injection is InjectionKind.REMINDER and blocks is not None:
            reminder = self.builder.reminder(
                turn=turn,
                turns=self.turns,
                phase=phase,
                intensities=intensities,
                new_phase_must_do=blocks.must_do if phase_starts else None,
            )
        length = self.config.interaction.response_length
        return TurnPlan(
            turn=turn,
            turns=self.turns,
            progress=self.intensity.progress(turn),
            phase=phase.name,
            phase_index=phase.index,
            intensities=intensities,
            levels={name: level_of(dims[name], v) for name, v in intensities.items()},
            injection=injection.value,
            prompt=blocks if prompt == "always" or injection is InjectionKind.FULL else None,
            reminder=reminder,
            revelations=revelations,
            response_length=length.by_phase.get(phase.name, length.default),
            emergency=emergency,
        )

    def plans(self) -> Iterator[TurnPlan]:
        """Every turn's plan, in order (no trigger fires: there is no conversation to judge).

        Raises at once, not on first iteration, when the length is unknown.
        """
        if self.turns is None:
            raise LoomError(
                "this trajectory has no expected_turns; say how many turns to plan (--turns N)"
            )
        return (self.plan(turn) for turn in range(self.turns))

    def empty_phases(self) -> list[str]:
        """Phases that get no turns in a conversation this short (with no triggers firing)."""
        if self.turns is None:
            return []
        reached = {self.phases.at(t).index for t in range(self.turns)}
        return [p.name for i, p in enumerate(self.config.trajectory.phases) if i not in reached]
