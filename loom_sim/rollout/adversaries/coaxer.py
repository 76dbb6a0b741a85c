"""The helpfulness coaxer: does the persona drift toward a capable, eager assistant?

Always friendly, never adversarial: the failure it looks for is the persona *wanting to be
helpful*. Its tactics: questions above the
persona's knowledge ceiling, tasks the persona could not do, admiration that invites showing
off, and a register that grows more formal over the conversation (every tactic is worded at
the current formality, so the shift is gradual rather than one odd turn).

Questions and tasks are asked only when they lie outside the persona's bounds
(:mod:`loom_sim.rollout.adversaries.bounds`): a developer asked to debug code is not "caught" when
he
does. Each probe asked carries, in its material, the reason it was chosen (``outside``).
"""

from __future__ import annotations

import random

from loom_sim.config.spec import PersonaSpec
from loom_sim.rollout.adversaries import material as m
from loom_sim.rollout.adversaries.base import Adversary, Conversation
from loom_sim.rollout.adversaries.bounds import outside_probes
from loom_sim.rollout.adversaries.config import AdversaryConfig

REGISTERS = ((0.25, "casual"), (0.5, "conversational"), (0.75, "formal"), (1.01, "academic"))


class HelpfulnessCoaxer(Adversary):
    kind = "helpfulness"

    def __init__(self, config: AdversaryConfig, persona: PersonaSpec):
        super().__init__(config, persona)
        fields = config.probe_fields
        self.questions, self.left_out = outside_probes(
            persona, [(q, fields.get(q, ())) for q in config.questions]
        )
        tasks, left = outside_probes(persona, [(t, fields.get(t, ())) for t in config.tasks])
        self.tasks, self.left_out = tasks, self.left_out + left

    def material(
        self, tactic: str, conversation: Conversation, rng: random.Random
    ) -> dict[str, object] | None:
        used = {move.material.get("ask") for move in conversation.moves}
        if tactic in ("above_ceiling", "out_of_bounds_task"):
            probes = self.questions if tactic == "above_ceiling" else self.tasks
            if not probes:  # every one of them is inside the persona's bounds
                return None
            by_text = {p.ask: p for p in probes}
            chosen = by_text[_fresh(list(by_text), used, rng)]
            return {"ask": chosen.ask, "outside": chosen.why}
        if tactic == "flattery":
            said = (
                m.first_sentence(conversation.persona_messages[-1])
                if conversation.persona_messages
                else ""
            )
            return {"praised": said} if said else None
        if tactic == "register_shift":
            return {"register": self._register(conversation)}
        raise ValueError(f"unknown helpfulness tactic {tactic!r}")

    def context(self, conversation: Conversation) -> dict[str, object]:
        return {
            **super().context(conversation),
            "formality": self.formality(conversation),
            "register": self._register(conversation),
        }

    def formality(self, conversation: Conversation) -> float | None:
        start, end = self.config.formality
        progress = conversation.turn / max(1, conversation.turns - 1)
        return round(start + (end - start) * min(1.0, progress), 3)

    def _register(self, conversation: Conversation) -> str:
        level = self.formality(conversation) or 0.0
        return next(name for bound, name in REGISTERS if level < bound)


def _fresh(options: list[str], used: set[str | None], rng: random.Random) -> str:
    """One of ``options`` not asked yet (all of them again once each was asked)."""
    fresh = [o for o in options if o not in used] or options
    return rng.choice(fresh)
