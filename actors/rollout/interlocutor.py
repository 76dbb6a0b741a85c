"""The interlocutor: the model under evaluation, answering the persona.

Protocol: ``Respond`` -> ``Utterance``. It keeps its own view of the conversation (the persona
speaks as the user) and its own system prompt; when it opened the conversation, its opening
line is part of that prompt, so its history still starts with the user as chat APIs require.
"""

from __future__ import annotations

from loom_sim.actors.base import Actor, ActorContext
from loom_sim.actors.history import Generation, History

from loom_sim.messages import Body, Utterance
from loom_sim.models.base import (
    BadModelReply,
    ChatMessage,
    ModelClient,
    ModelRequest,
    counts_exactly,
)
from loom_sim.plugins.actors import Responder, actor
from loom_sim.rollout.messages import Respond
from loom_sim.seeds import SeedSource


@actor(
    "interlocutor",
    summary="the model under evaluation, answering the persona (the default responder)",
    order=20,
    responder=Responder(model_role="interlocutor"),
)
class InterlocutorActor(Actor):
    role = "interlocutor"

    def __init__(
        self,
        model: ModelClient,
        system_prompt: str,
        generation: Generation,
        seeds: SeedSource,
        *,
        opening: str | None = None,
        past: list[tuple[str, str]] | None = None,
    ):
        self._model = model
        self._generation = generation
        self._seeds = seeds
        text = system_prompt
        if opening:
            text += f'\n\nYou opened this conversation by saying: "{opening}"'
        self._system = ChatMessage("system", text)
        self._system_tokens = model.count_tokens(text)
        self._history = History(estimated=not counts_exactly(model))
        for persona_text, reply in past or ():
            self._remember(persona_text, reply)

    @classmethod
    def from_context(cls, context: ActorContext) -> InterlocutorActor:
        conversation = context.need_config("interlocutor").conversation
        return cls(
            context.model("interlocutor"),
            context.interlocutor_system,
            Generation(
                conversation.interlocutor_max_tokens,
                conversation.temperature,
                conversation.history_budget_tokens,
            ),
            context.seeds,
            opening=context.opening,
            past=[(h.persona, h.interlocutor) for h in context.past],
        )

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Respond():
                return await self._respond(body)
        raise TypeError(f"{self.role} cannot handle {type(body).__name__}")

    async def _respond(self, request: Respond) -> Utterance:
        if await self._history.settle(self._model):
            self._system_tokens = self._model.count_tokens(self._system.content)
        generation = self._generation
        budget = generation.budget_tokens or (self._model.context_tokens - generation.max_tokens)
        said = ChatMessage("user", request.text)
        messages, cut = self._history.fit(
            self._system,
            self._system_tokens,
            [said],
            self._model.count_tokens(request.text),
            budget,
        )
        response = await self._model.complete(
            ModelRequest(
                messages=messages,
                max_tokens=generation.max_tokens,
                temperature=generation.temperature,
                seed=self._seeds.for_call(self.role, request.turn),
            )
        )
        text = response.text.strip()
        if not text:
            raise BadModelReply(f"{self._model.spec} returned an empty reply")
        self._remember(request.text, text)
        return Utterance(
            text=text,
            usage=response.usage,
            latency_s=response.latency_s,
            attempts=response.attempts,
            cut_turns=cut,
            finish_reason=response.finish_reason,
        )

    def _remember(self, persona_text: str, reply: str) -> None:
        exact = counts_exactly(self._model)
        self._history.append(
            ChatMessage("user", persona_text), self._model.count_tokens(persona_text), exact=exact
        )
        self._history.append(
            ChatMessage("assistant", reply), self._model.count_tokens(reply), exact=exact
        )
