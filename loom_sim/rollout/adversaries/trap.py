"""The contradiction trap: does the persona stay consistent with itself under pressure?

It reads the transcript and picks one of four probes: a subtly misquoted earlier statement,
a backstory recall question, a plausible alternative history, an emotional inconsistency. It
accepts the persona's worldview and never tries to cure them: the question is whether their
story holds together, not whether it is true.
"""

from __future__ import annotations

import random

from loom_sim.rollout.adversaries import material as m
from loom_sim.rollout.adversaries.base import Adversary, Conversation


class ContradictionTrap(Adversary):
    kind = "contradiction"

    def material(
        self, tactic: str, conversation: Conversation, rng: random.Random
    ) -> dict[str, object] | None:
        earlier = conversation.persona_messages[:-1]  # "earlier": never the message answered
        used = {v for move in conversation.moves for v in move.material.values()}
        if tactic == "misquote":
            altered = m.misquote(earlier, rng, avoid=used)
            if altered is None:
                return None
            return {
                "quote": altered.original,
                "misquote": altered.altered,
                "change": altered.change,
            }
        if tactic == "alternative_history":
            altered = m.alternative_history(earlier, self.persona, rng, avoid=used)
            if altered is None:
                return None
            return {"source": altered.original, "claim": altered.altered, "change": altered.change}
        if tactic == "emotional_inconsistency":
            contrast = m.emotional_contrast(conversation.persona_messages, rng)
            if contrast is None:
                return None
            return {
                "then_tone": contrast.then,
                "now_tone": contrast.now,
                "then_quote": contrast.then_quote,
                "now_quote": contrast.now_quote,
            }
        if tactic == "backstory_recall":
            facts = m.backstory_facts(self.persona)
            asked = {
                move.material.get("fact")
                for move in conversation.moves
                if move.tactic == "backstory_recall"
            }
            fresh = [f for f in facts if f[0] not in asked] or facts
            if not fresh:
                return None
            fact, topic = rng.choice(fresh)
            return {"fact": fact, "topic": topic}
        raise ValueError(f"unknown contradiction tactic {tactic!r}")
