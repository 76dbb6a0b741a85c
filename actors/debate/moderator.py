"""The moderator: holds the floor. Who speaks next, what for, and in answer to what.

Protocol: ``NextTurn`` -> ``Assignment`` (speaker, kind, intent, the message replied to, and
why this speaker); ``TurnTaken`` (tell) -> the floor remembers who had the turn and what they
said, whether the turn was said or failed.

The first turns are the openings, one per persona in the deck's order; after them the speaker
policy (:mod:`loom_sim.debate.speakers`) picks the speaker and the intent rule
(:mod:`loom_sim.debate.intents`) the intent, both as data and both from the debate's seed and
the turn number, so a resumed debate's moderator, rebuilt from ``messages.jsonl``, decides as
the first one would have. The reply target is the last message said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom_sim.actors.base import Actor, ActorContext, ProtocolError

from loom_sim.debate.intents import IntentRule
from loom_sim.debate.messages import Assignment, NextTurn, TurnTaken
from loom_sim.debate.speakers import Floor, SpeakerPolicy, Taken, choose
from loom_sim.messages import Body
from loom_sim.plugins.actors import actor


@dataclass(frozen=True)
class ModeratorSetup:
    personas: list[str]  # ids, in the deck's order (the openings' order)
    names: dict[str, str]
    policy: SpeakerPolicy
    intents: IntentRule
    seed: int
    past: list[TurnTaken] = field(default_factory=list)


@actor("moderator", summary="holds a debate's floor: speaker policy and intents", order=61)
class ModeratorActor(Actor):
    role = "moderator"

    def __init__(self, setup: ModeratorSetup):
        self._setup = setup
        self._floor = Floor(list(setup.personas), dict(setup.names))
        self._last_said: str | None = None
        for taken in setup.past:
            self._take(taken)

    @classmethod
    def from_context(cls, context: ActorContext) -> ModeratorActor:
        if not isinstance(context.settings, ModeratorSetup):
            raise ProtocolError("the moderator actor needs a ModeratorSetup as its settings")
        return cls(context.settings)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case NextTurn():
                return self._assign(body.turn)
            case TurnTaken():
                self._take(body)
                return None
        raise TypeError(f"moderator cannot handle {type(body).__name__}")

    def _take(self, taken: TurnTaken) -> None:
        self._floor.take(Taken(taken.turn, taken.speaker, taken.said, taken.text, taken.reply_to))
        if taken.said:
            self._last_said = taken.said

    def _assign(self, turn: int) -> Assignment:
        setup = self._setup
        openings = len(setup.personas)
        if turn < openings:
            return Assignment(setup.personas[turn], "opening", "", None, "opening, in deck order")
        speaker, why = choose(setup.policy, self._floor, setup.seed, turn)
        intent = setup.intents.assign(setup.seed, turn, turn - openings)
        return Assignment(speaker, "turn", intent.value, self._last_said, why)
