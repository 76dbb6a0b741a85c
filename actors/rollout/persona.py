"""The persona: a model playing the configured person, steered by the assembler's scaffolding.

Protocol: ``Speak`` -> ``Utterance`` (a candidate; the rollout decides whether it is sent);
``Heard`` (tell) -> the committed exchange joins the persona's history. The persona's system
prompt is the scaffolding of its first full injection; a later full injection arrives as an
update that joins the history (``persona_view.py``), and this turn's reminder, emergency
intervention or re-prompt is appended to the newest message. That keeps the prompt's prefix
(system + history) identical from call to call, which is what prompt caches reuse — llama.cpp's
KV cache locally, the providers' prompt caching remotely — and chat APIs still see one system
message and strictly alternating turns.
"""

from __future__ import annotations

from loom_sim.actors.base import Actor, ActorContext
from loom_sim.actors.history import Generation
from loom_sim.rollout.actors.persona_view import PersonaView

from loom_sim.config.interaction import LaterFull
from loom_sim.messages import Body, Heard, Utterance
from loom_sim.models.base import (
    BadModelReply,
    ChatMessage,
    ModelClient,
    ModelRequest,
    Role,
    counts_exactly,
)
from loom_sim.plugins.actors import actor
from loom_sim.rollout.messages import Speak
from loom_sim.seeds import SeedSource
from loom_sim.store.records import TurnRecord

CONVERSATION_START = "[The conversation starts now. Write your first message.]"


@actor("persona", summary="the model playing the configured person", order=10)
class PersonaActor(Actor):
    role = "persona"
    quick_tells = True  # ``Heard`` only joins the history

    def __init__(
        self,
        model: ModelClient,
        generation: Generation,
        seeds: SeedSource,
        *,
        opening: str | None = None,
        first: str | None = None,
        scaffolding: str = "",
        past: list[Heard] | None = None,
        records: list[TurnRecord] | None = None,
        as_updates: bool = True,
    ):
        self._model = model
        self._generation = generation
        self._seeds = seeds
        self._view = PersonaView()
        self._counts: dict[str, int] = {}  # prompts and notes, counted once
        self._first = first  # the first message, word for word (no model call)
        self._hear(opening or CONVERSATION_START, "user")
        for exchange in past or ():
            self._remember(exchange)
        # the prompts the records show in force, and the updates that told the persona
        self._view.rebuild(records or [], scaffolding, as_updates=as_updates)

    @classmethod
    def from_context(cls, context: ActorContext) -> PersonaActor:
        config = context.need_config("persona")
        conversation = config.conversation
        max_tokens = conversation.persona_max_tokens
        if context.max_tokens is not None:
            max_tokens = min(max_tokens, context.max_tokens)
        return cls(
            context.model("persona"),
            Generation(
                max_tokens,
                conversation.temperature,
                conversation.history_budget_tokens,
                grammar=context.grammar,
            ),
            context.seeds,
            opening=context.opening,
            first=conversation.persona_opening if context.opening is None else None,
            scaffolding=context.scaffolding,
            past=context.past,
            records=context.records,
            as_updates=config.interaction.injection.later_full is LaterFull.UPDATE,
        )

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Speak():
                return await self._speak(body)
            case Heard():
                self._remember(body)
                return None
        raise TypeError(f"persona cannot handle {type(body).__name__}")

    async def _speak(self, request: Speak) -> Utterance:
        await self._view.history.settle(self._model)
        if request.scaffolding is not None:
            self._view.inject(request.turn, request.scaffolding, request.update)
        if request.turn == 0 and self._first is not None:
            # A fixed opening (a benchmark's scenario prompt): said as written, no tokens spent.
            return Utterance(text=self._first, attempts=0, finish_reason="fixed")
        notes = "\n\n".join(n for n in (request.reminder, request.emergency, request.vary) if n)
        generation = self._generation
        budget = generation.budget_tokens or (self._model.context_tokens - generation.max_tokens)
        messages, cut = self._view.compose(notes, self._count, budget)
        response = await self._model.complete(
            ModelRequest(
                messages=messages,
                max_tokens=generation.max_tokens,
                temperature=generation.temperature,
                seed=self._seeds.for_call(self.role, request.turn, request.attempt),
                grammar=generation.grammar,
            )
        )
        text = response.text.strip()
        if not text:
            raise BadModelReply(f"{self._model.spec} returned an empty persona message")
        return Utterance(
            text=text,
            usage=response.usage,
            latency_s=response.latency_s,
            attempts=response.attempts,
            cut_turns=cut,
            finish_reason=response.finish_reason,
        )

    def _remember(self, exchange: Heard) -> None:
        self._hear(exchange.persona, "assistant")
        self._hear(exchange.interlocutor, "user")

    def _count(self, text: str) -> int:
        if text not in self._counts:
            self._counts[text] = self._model.count_tokens(text)
        return self._counts[text]

    def _hear(self, text: str, role: Role) -> None:
        self._view.history.append(
            ChatMessage(role, text),
            self._model.count_tokens(text),
            exact=counts_exactly(self._model),
        )
