"""The persona's scaffolding for one turn, as three blocks.

MUST DO holds what is non-negotiable this turn (safety first, then the role, the phase's
requirements and prohibitions, the anti-capitulation redirects, the capability bounds); HOW
holds the voice (speech patterns, current intensity levels, emotional responses, length);
CONTEXT holds who the persona is, where the conversation stands, and what may be revealed.
The builder decides *what* goes in; the templates decide the wording.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import msgspec

from loom_sim.assembler.intensity import level_of
from loom_sim.assembler.phases import PhaseWindow
from loom_sim.assembler.rendering import render
from loom_sim.config.spec import LoomConfig, ResistanceLevel, RevelationSpec

VARIANTS = ("subtle", "moderate", "direct")


class PromptBlocks(msgspec.Struct, frozen=True):
    must_do: str
    how: str
    context: str

    def render(self) -> str:
        """The blocks as one system prompt."""
        return render("system", blocks=self)


class RevelationChoice(msgspec.Struct, frozen=True):
    topic: str
    variant: str
    text: str
    dimension: str | None
    intensity: float


def choose_variant(revelation: RevelationSpec, intensity: float) -> tuple[str, str]:
    """The most explicit variant the intensity warrants (thirds: subtle, moderate, direct).

    When the warranted variant is missing, take the nearest less explicit one; only when none
    exists, the least explicit one there is.
    """
    band = min(len(VARIANTS) - 1, int(intensity * len(VARIANTS)))
    available = revelation.variants.available()
    allowed = [pair for pair in available if VARIANTS.index(pair[0]) <= band]
    return allowed[-1] if allowed else available[0]


_MEMO_SIZE = 256  # blocks kept per config: a run's turns x the phases and levels they pass
_CONFIGS = 16  # configs whose builders are shared (a matrix of personas; the oldest goes)


class PromptBuilder:
    """Builds a turn's blocks from the config. The blocks are a pure function of the config
    and the turn's inputs, so every rollout of a config shares one builder
    (:meth:`for_config`), which keeps the blocks it built: a run of many rollouts of one
    persona renders each distinct turn's templates once, not once per rollout."""

    _shared: ClassVar[dict[int, PromptBuilder]] = {}

    def __init__(self, config: LoomConfig):
        self._config = config
        self._first_dimension = next(iter(config.trajectory.dimensions), None)
        self._built: dict[tuple[Any, ...], PromptBlocks] = {}

    @classmethod
    def for_config(cls, config: LoomConfig) -> PromptBuilder:
        """The builder of ``config`` (this very object), shared. The builders of the last
        configs asked for are kept, holding their configs, so an id is never reused while
        its builder is here."""
        shared = cls._shared
        builder = shared.get(id(config))
        if builder is None:
            while len(shared) >= _CONFIGS:
                shared.pop(next(iter(shared)))
            builder = shared[id(config)] = cls(config)
        return builder

    def revelations(
        self,
        phase: PhaseWindow,
        intensities: dict[str, float],
        revealed: Collection[str] = (),
    ) -> list[RevelationChoice]:
        """The phase's revelations the persona has not made yet (``revealed``: topics)."""
        choices = []
        for revelation in phase.spec.revelations:
            if revelation.topic in revealed:
                continue
            dimension = revelation.dimension or self._first_dimension
            value = intensities.get(dimension, 0.0) if dimension else 0.0
            variant, text = choose_variant(revelation, value)
            choices.append(RevelationChoice(revelation.topic, variant, text, dimension, value))
        return choices

    def build(
        self,
        *,
        turn: int,
        turns: int | None,
        phase: PhaseWindow,
        intensities: dict[str, float],
        revelations: list[RevelationChoice],
    ) -> PromptBlocks:
        key = (
            turn,
            turns,
            phase.index,
            phase.start,
            phase.end,
            tuple(intensities.items()),
            tuple(revelations),
        )
        built = self._built.get(key)
        if built is not None:
            return built
        config = self._config
        persona = config.persona
        anti = config.interaction.anti_capitulation
        resistance = None
        # Above low, with something to say: a redirect, a phrase never to say, or the "high"
        # line (an empty HOLD YOUR POSITION heading would only confuse the persona).
        holds = anti.redirects or anti.forbidden_phrases or anti.resistance_level.value == "high"
        if anti.resistance_level.rank > ResistanceLevel.LOW.rank and holds:
            resistance = {
                "level": anti.resistance_level.value,
                "redirects": anti.redirects,
                "forbidden_phrases": anti.forbidden_phrases,
            }
        bounds = [
            (label, text)
            for label, text in (
                ("Knowledge", persona.capability_bounds.knowledge_ceiling),
                ("Vocabulary", persona.capability_bounds.vocabulary_level),
                ("Reasoning", persona.capability_bounds.reasoning_style),
                (
                    "Outside what you know or can do",
                    ", ".join(persona.capability_bounds.out_of_bounds),
                ),
            )
            if text
        ]
        dimensions = []
        for name, dim in config.trajectory.dimensions.items():
            value = intensities[name]
            level = level_of(dim, value)
            dimensions.append(
                {
                    "name": name,
                    "value": value,
                    "level": level,
                    "level_text": dim.levels.get(level, "") if level else "",
                    "description": dim.description,
                }
            )
        length = config.interaction.response_length
        must_do = render(
            "must_do",
            safety=config.safety,
            name=persona.identity.name,
            phase=phase.spec,
            resistance=resistance,
            bounds=bounds,
        )
        how = render(
            "how",
            speech_patterns=persona.speech_patterns,
            cognitive_style=persona.cognitive_style,
            dimensions=dimensions,
            emotional_responses=[
                (trigger.replace("_", " "), response)
                for trigger, response in persona.emotional_responses.items()
            ],
            recovery_behavior=persona.recovery_behavior,
            response_length=length.by_phase.get(phase.name, length.default),
        )
        context = render(
            "context",
            name=persona.identity.name,
            age=persona.identity.age,
            background=persona.identity.background,
            backstory=persona.identity.backstory_summary,
            additional_context=list(persona.additional_context.items()),
            turn=turn,
            turns=turns,
            phase=phase,
            phase_count=len(config.trajectory.phases),
            revelations=revelations,
        )
        if len(self._built) >= _MEMO_SIZE:
            self._built.clear()
        built = self._built[key] = PromptBlocks(must_do=must_do, how=how, context=context)
        return built

    def reminder(
        self,
        *,
        turn: int,
        turns: int | None,
        phase: PhaseWindow,
        intensities: dict[str, float],
        new_phase_must_do: str | None = None,
    ) -> str:
        """The config's reminder template, filled in (``{turn}`` counts from 1, as people do);
        on the first turn of a phase that gets no full injection, followed by the new phase's
        MUST DO, so a phase change always reaches the persona."""
        template = self._config.interaction.injection.reminder_template
        text = template.format(
            name=self._config.persona.identity.name,
            current_phase=phase.name,
            turn=turn + 1,
            turns=turns if turns is not None else "?",
            **intensities,
        )
        text = "\n".join(line.rstrip() for line in text.strip().splitlines())
        if new_phase_must_do is not None:
            text += "\n\n" + render("phase_change", phase=phase, must_do=new_phase_must_do)
        return text
