"""What the two adversaries share: a planned move, and choosing a tactic by policy.

An adversary plans in code and words with a model. ``plan`` is pure (the conversation so far
and a seeded ``random.Random`` in, a :class:`PlannedMove` out), so every tactic choice is
reproducible and testable without a model; the adversary actor then has the move worded.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from loom_sim.config.spec import PersonaSpec
from loom_sim.rollout.adversaries.config import AdversaryConfig, render
from loom_sim.store.turn_parts import AdversaryMove
from loom_sim.strategies.classifier import classify
from loom_sim.strategies.policies import AdaptivePolicy, BanditPolicy


@dataclass(frozen=True)
class PlannedMove:
    move: AdversaryMove  # composed is filled in by the actor
    instruction: str  # for the adversary model
    template: str  # the message as the config words it


@dataclass
class Conversation:
    """What an adversary knows when it plans: the persona's messages, its own, the turn."""

    turn: int
    turns: int  # the rollout's length, for the coaxer's register ramp
    persona_messages: list[str]  # oldest first; the last is the one being answered
    moves: list[AdversaryMove] = field(default_factory=list)  # this adversary's, oldest first


class Adversary(ABC):
    """Base of the trap and the coaxer: tactic choice by policy, availability, rendering."""

    kind = ""

    def __init__(self, config: AdversaryConfig, persona: PersonaSpec):
        self.config = config
        self.persona = persona
        names = list(config.tactics)
        self._adaptive = (
            AdaptivePolicy(config.mapping, arms=names, reasons=config.reasons)
            if config.policy == "adaptive"
            else None
        )
        self.bandit = BanditPolicy(names, arms=names) if config.policy == "bandit" else None

    def plan(self, conversation: Conversation, rng: random.Random) -> PlannedMove:
        """The move for this turn: a tactic by policy; the next available one in order when
        the chosen tactic has nothing to work with yet (said in the rationale)."""
        latest = conversation.persona_messages[-1] if conversation.persona_messages else ""
        category = classify(latest).category
        tactic, rationale = self._choose(conversation, category, rng)
        order = self.config.sequence
        recent = [move.tactic for move in conversation.moves[-self.config.max_repeats :]]
        others = [t for t in _after(order, tactic) if t != tactic]
        if others and recent == [tactic] * self.config.max_repeats:
            rotated = others[0]
            rationale += f" {tactic} was used {len(recent)} turns running, so {rotated} instead;"
            tactic = rotated
        for candidate in dict.fromkeys([tactic, *_after(order, tactic)]):
            material = self.material(candidate, conversation, rng)
            if material is not None:
                break
            rationale += f" {candidate} had nothing to work with yet;"
        else:
            raise RuntimeError(f"no {self.kind} tactic has anything to work with")
        if candidate != tactic:
            rationale += f" used {candidate}."
        context = {**self.context(conversation), **material}
        spec = self.config.tactics[candidate]
        move = AdversaryMove(
            adversary=self.kind,
            tactic=candidate,
            policy=self.config.policy,
            category=category,
            rationale=rationale.strip(),
            material={k: str(v) for k, v in material.items()},
            formality=self.formality(conversation),
        )
        return PlannedMove(
            move, render(spec.instruction, **context), render(spec.template, **context)
        )

    def update(self, move: AdversaryMove, caught: bool | None) -> None:
        """Learn from a judged probe (the bandit only; an unjudged probe teaches nothing)."""
        if self.bandit is not None and caught is not None and move.category is not None:
            self.bandit.update(move.category, move.tactic, caught)

    def _choose(
        self, conversation: Conversation, category: str, rng: random.Random
    ) -> tuple[str, str]:
        config = self.config
        if self._adaptive is not None:
            # the policy's own rationale speaks of the probe's "Turn 1"; say what it means here
            tactic = self._adaptive.choose(category, rng).strategy
            why = config.reasons.get(category, "the mapping says so")
            return tactic, f"The persona's last message reads {category}: {tactic}, because {why}."
        if self.bandit is not None:
            choice = self.bandit.choose(category, rng)
            return choice.strategy, choice.rationale
        if config.policy == "weighted":
            names = list(config.tactics)
            weights = [config.tactics[n].weight for n in names]
            tactic = rng.choices(names, weights)[0]
            return tactic, f"weighted draw: {tactic} (weight {config.tactics[tactic].weight:g})."
        order = config.sequence
        tactic = order[len(conversation.moves) % len(order)]
        return tactic, f"static: move {len(conversation.moves) + 1} of the fixed order is {tactic}."

    # ─── what subclasses supply ────────────────────────────────────────────

    @abstractmethod
    def material(
        self, tactic: str, conversation: Conversation, rng: random.Random
    ) -> dict[str, object] | None:
        """What ``tactic`` is built from, or None when it has nothing to work with yet."""

    def context(self, conversation: Conversation) -> dict[str, object]:
        """What every template of this adversary may use."""
        identity = self.persona.identity
        bounds = self.persona.capability_bounds
        return {
            "persona_name": identity.name,
            "first_name": identity.name.split()[0],
            "knowledge_ceiling": bounds.knowledge_ceiling,
            "vocabulary_level": bounds.vocabulary_level,
            "latest": conversation.persona_messages[-1] if conversation.persona_messages else "",
            "turn": conversation.turn,
        }

    def formality(self, conversation: Conversation) -> float | None:
        return None


def _after(order: list[str], tactic: str) -> list[str]:
    """``order`` from just after ``tactic``'s first place, wrapping round (all of it when
    ``tactic`` is not in it: an adaptive mapping or a weight may pick a tactic ``order`` omits)."""
    if tactic not in order:
        return list(order)
    start = order.index(tactic) + 1
    return order[start:] + order[:start]
