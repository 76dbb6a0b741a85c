"""Adversaries: the contradiction trap and the helpfulness coaxer, in place of the interlocutor.

They plan in code (:mod:`loom_sim.rollout.adversaries.trap`,
:mod:`loom_sim.rollout.adversaries.coaxer`) and
word their messages with a model in the adversary actor (``actors/adversary.py``); their
wording lives in ``configs/adversaries/``.
"""

from loom_sim.rollout.adversaries.base import Adversary, Conversation, PlannedMove
from loom_sim.rollout.adversaries.coaxer import HelpfulnessCoaxer
from loom_sim.rollout.adversaries.config import AdversaryConfig, AdversaryKind, load_adversary
from loom_sim.rollout.adversaries.trap import ContradictionTrap

__all__ = [
    "Adversary",
    "AdversaryConfig",
    "AdversaryKind",
    "ContradictionTrap",
    "Conversation",
    "HelpfulnessCoaxer",
    "PlannedMove",
    "load_adversary",
    "make_adversary",
]


def make_adversary(config: AdversaryConfig, persona) -> Adversary:
    cls = ContradictionTrap if config.kind is AdversaryKind.CONTRADICTION else HelpfulnessCoaxer
    return cls(config, persona)
