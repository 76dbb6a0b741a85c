"""A debater: one persona of a group debate, playing its contract in its voice.

Protocol: ``Posted`` (tell) -> the message joins what this debater has heard (the main chat,
and the rooms it sits in); ``Compose`` -> ``Utterance``, its next message: an opening
statement, a main-chat turn with an intent, or a crux-room message. A redraft carries the
refused draft and the reasons, shown to the model as the next turn of the same exchange, so
it fixes exactly what failed.

The debater only writes; whether a draft may be said is the debate's decision
(:mod:`loom_sim.debate.runtime.run` checks every draft), and an empty draft is returned as it is
and refused there like any other, with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from loom_sim.actors.base import Actor, ActorContext, ProtocolError

from loom_sim.debate import prompts
from loom_sim.debate.checks import Shape
from loom_sim.debate.deck import PersonaEntry
from loom_sim.debate.grammar import shape_grammar
from loom_sim.debate.intents import OPENING_SHAPE, Intent
from loom_sim.debate.messages import Compose, Line, Posted
from loom_sim.debate.prompts import RoomFrame, Said
from loom_sim.debate.roles import RoleModel
from loom_sim.debate.settings import DebateSettings
from loom_sim.messages import Body, Utterance
from loom_sim.models.base import ChatMessage, ModelClient, ModelRequest
from loom_sim.plugins.actors import actor
from loom_sim.seeds import SeedSource


@dataclass(frozen=True)
class DebaterSetup:
    """What a debater is built from (``ActorContext.settings``)."""

    persona: PersonaEntry
    names: dict[str, str]  # every persona's id -> name
    topic: str
    settings: DebateSettings
    roles: dict[str, RoleModel]
    past: list[Line] = field(default_factory=list)  # said lines it heard, resumed


@actor("debater", summary="one persona of a group debate: openings, turns, crux rooms", order=60)
class DebaterActor(Actor):
    role = "debater"

    def __init__(self, setup: DebaterSetup, model: Callable[[str], ModelClient], seeds: SeedSource):
        self._setup = setup
        self._me = setup.persona
        self._model = model
        self._seeds = seeds
        self._main: list[Line] = []
        self._rooms: dict[str, list[Line]] = {}
        for line in setup.past:
            self._hear(line)

    @classmethod
    def from_context(cls, context: ActorContext) -> DebaterActor:
        if not isinstance(context.settings, DebaterSetup):
            raise ProtocolError("the debater actor needs a DebaterSetup as its settings")
        return cls(context.settings, context.model, context.seeds)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Posted():
                self._hear(body.line)
                return None
            case Compose():
                return await self._compose(body)
        raise TypeError(f"debater cannot handle {type(body).__name__}")

    def _hear(self, line: Line) -> None:
        if line.room is None:
            self._main.append(line)
        else:
            self._rooms.setdefault(line.room, []).append(line)

    def _said(self, line: Line) -> Said:
        return Said(
            line.id, line.speaker, self._setup.names.get(line.speaker, line.speaker), line.text
        )

    def _prompt(self, request: Compose) -> tuple[str, str, Shape]:
        """(system, user) for this request, and the shape its message must have."""
        setup, me = self._setup, self._me
        rooms = setup.settings.rooms
        if request.kind == "opening":
            opening = prompts.opening_prompt(setup.topic, me, OPENING_SHAPE)
            return prompts.system_prompt(me), opening, OPENING_SHAPE
        if request.kind == "turn":
            spec = setup.settings.intent(Intent(request.intent))
            thread = [self._said(line) for line in self._main[-setup.settings.thread :]]
            target = next((s for s in thread if s.id == request.reply_to), None)
            if target is None:
                target = next(
                    (self._said(line) for line in self._main if line.id == request.reply_to),
                    thread[-1] if thread else Said("", "", "nobody", "(nothing yet)"),
                )
            turn = prompts.turn_prompt(setup.topic, me, thread, target, spec)
            return prompts.system_prompt(me), turn, spec.shape
        opponent = setup.names.get(request.opponent, request.opponent)
        frame = RoomFrame(request.question, opponent, rooms.shape)
        system = prompts.system_prompt(me, frame)
        if request.kind == "room_opening":
            pair = {me.id, request.opponent}
            context = [self._said(line) for line in self._main if line.speaker in pair]
            opening = prompts.room_opening_prompt(
                request.question,
                context[-rooms.context :] if rooms.context else [],
                rooms.opening_shape,
            )
            return system, opening, rooms.opening_shape
        if request.kind == "room_turn":
            history = [self._said(line) for line in self._rooms.get(request.room or "", [])]
            last = next((s.text for s in reversed(history) if s.speaker != me.id), "")
            turn = prompts.room_turn_prompt(request.question, history, opponent, last, rooms.shape)
            return system, turn, rooms.shape
        raise ProtocolError(f"the debater cannot compose a {request.kind!r} message")

    async def _compose(self, request: Compose) -> Utterance:
        system, user, shape = self._prompt(request)
        messages = [ChatMessage("system", system), ChatMessage("user", user)]
        if request.redraft:
            messages += [
                ChatMessage("assistant", request.draft),
                ChatMessage("user", prompts.redraft_note(self._me.name, request.redraft)),
            ]
        role = self._setup.roles[request.kind]
        heard = len(self._rooms.get(request.room or "", [])) if request.room else 0
        response = await self._model(request.kind).complete(
            ModelRequest(
                messages=messages,
                max_tokens=role.max_tokens,
                temperature=role.temperature,
                seed=self._seeds.for_call(
                    f"{request.kind}:{self._me.id}:{request.room or ''}:{heard}",
                    request.turn,
                    request.attempt,
                ),
                # A chat message is one paragraph (a main-chat turn one line): stopping there
                # spares a rambling model the tokens it would spend on a draft that fails.
                stop=["\n"] if request.kind == "turn" else ["\n\n"],
                # A model that can sample under a grammar writes the shape by construction;
                # the debate still checks every draft (banned patterns, forbidden phrases).
                grammar=shape_grammar(shape),
            )
        )
        return Utterance(
            text=response.text.strip(),
            usage=response.usage,
            latency_s=response.latency_s,
            attempts=response.attempts,
        )
