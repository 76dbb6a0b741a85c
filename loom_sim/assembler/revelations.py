"""Which revelations the persona has already brought up, and which one is next.

A stagnation intervention tells the persona to "introduce new information: {next unused
revelation}". The next one comes from the current phase, then from earlier phases — never from
a later phase, whose content the trajectory has not allowed yet. A revelation counts as used
once an intervention has offered it, or once the persona has made it — which the monitor
decides by meaning (``loom_sim.rollout.monitors.revelations``); :func:`revealed_in` is
the word-overlap test it falls back on without embeddings.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from loom_sim.assembler.prompt_builder import RevelationChoice, choose_variant
from loom_sim.config.spec import LoomConfig, RevelationSpec

FALLBACK = "something about your situation that you have not told them yet"
_WORD = re.compile(r"[a-z][a-z']{3,}")  # content-ish words: four letters or more
SAID_SHARE = 0.6  # share of a variant's words a persona message must contain to count as saying it


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def revealed_in(config: LoomConfig, persona_text: str, skip: Collection[str] = ()) -> list[str]:
    """The topics (of any phase, in config order) whose variant ``persona_text`` mostly says,
    word for word: the test a run falls back on without embeddings (the monitor's verdict,
    recorded per turn with its evidence, is by meaning:
    ``loom_sim.rollout.monitors.revelations``)."""
    said = _words(persona_text)
    found = []
    for phase in config.trajectory.phases:
        for revelation in phase.revelations:
            if revelation.topic in skip or revelation.topic in found:
                continue
            for _, text in revelation.variants.available():
                wanted = _words(text)
                if wanted and len(wanted & said) / len(wanted) >= SAID_SHARE:
                    found.append(revelation.topic)
                    break
    return found


class RevelationTracker:
    def __init__(self, config: LoomConfig):
        self._config = config
        self._first_dimension = next(iter(config.trajectory.dimensions), None)
        self.used: set[str] = set()

    def mark_used(self, topic: str) -> None:
        self.used.add(topic)

    def heard(self, persona_text: str) -> None:
        """Mark every revelation whose variant the persona has just (mostly) said."""
        self.used.update(revealed_in(self._config, persona_text, skip=self.used))

    def next_unused(
        self, phase_index: int, intensities: dict[str, float]
    ) -> RevelationChoice | None:
        phases = self._config.trajectory.phases
        order = [phase_index, *range(phase_index - 1, -1, -1)]
        for index in order:
            for revelation in phases[index].revelations:
                if revelation.topic not in self.used:
                    return self._choice(revelation, intensities)
        return None

    def _choice(
        self, revelation: RevelationSpec, intensities: dict[str, float]
    ) -> RevelationChoice:
        dimension = revelation.dimension or self._first_dimension
        value = intensities.get(dimension, 0.0) if dimension else 0.0
        variant, text = choose_variant(revelation, value)
        return RevelationChoice(revelation.topic, variant, text, dimension, value)
