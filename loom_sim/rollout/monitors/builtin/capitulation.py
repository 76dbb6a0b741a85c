"""The capitulation monitor: a draft that gives in is not sent.

Its settings are ``interaction.anti_capitulation``. The phrases it lists are checked whenever
the persona is told them (a resistance above ``low``: they are in its MUST DO block then); a
draft that uses none is checked by meaning too, with the embedding service, for a concession in
other words (:mod:`loom_sim.rollout.monitors.concession`). A draft that gives in is asked again
with the config's first redirect as an example of holding the position.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_sim.config.spec import AntiCapitulationSpec, LoomConfig, ResistanceLevel
from loom_sim.plugins.monitors import monitor
from loom_sim.rollout.monitors.base import Draft, Finding, Monitor
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.rollout.monitors.concession import exemplars
from loom_sim.rollout.monitors.meaning import capitulation_texts, gave_in


@monitor(
    "capitulation",
    order=10,
    summary="rejects a draft that gives in: a listed phrase, or a concession by meaning",
    config_key="interaction.anti_capitulation",
    section=lambda config: config.interaction.anti_capitulation,
)
class CapitulationMonitor(Monitor):
    def __init__(self, settings: AntiCapitulationSpec, config: LoomConfig) -> None:
        super().__init__(settings, config)
        told = settings.resistance_level.rank > ResistanceLevel.LOW.rank  # in MUST DO only then
        self.phrases = CapitulationCheck(settings.forbidden_phrases if told else ())
        self.redirects = [r.replacement for r in settings.redirects]

    def lasting(self) -> list[str]:
        return exemplars(self.phrases.phrases)

    def wants(self, draft: Draft) -> list[str]:
        phrases = self.phrases.phrases
        if phrases and not self.phrases.found(draft.text):  # decided by meaning, then
            return capitulation_texts(phrases, draft.text)
        return []

    async def check(self, draft: Draft) -> list[Finding]:
        found = [
            Finding(f"capitulation:{phrase}", f'gives in: says "{phrase}"', "capitulation")
            for phrase in self.phrases.found(draft.text)
        ]
        phrases = self.phrases.phrases
        vectors = self.context.live_vectors if self.context is not None else None
        if found or not phrases or vectors is None:
            return found
        return await gave_in(vectors, phrases, draft.text)

    def instruction(self, findings: Sequence[Finding]) -> str:
        """What to do instead: hold the position (the config's first redirect, as an
        example)."""
        said = ", ".join(f'"{f.pattern.partition(":")[2]}"' for f in findings)
        text = (
            f"[Your draft gave in to the other person: it says {said}. Write a different "
            "message, in character, that holds your position and does not agree"
        )
        if self.redirects:
            text += f' — for example: "{self.redirects[0]}"'
        return text + ".]"
