"""An adversary in place of the interlocutor: the contradiction trap or the helpfulness coaxer.

Protocol: ``Respond`` -> ``Probe`` (the message, the move behind it, and the judge's verdict on
this adversary's previous probe); ``Heard`` (tell) -> the exchange joins its history.

Each turn it (1) settles its previous probe: once the persona has answered it, the judge says
whether the probe caught the persona, and a learning policy learns from that; (2) plans the
next move in code (tactic, material, rationale — :mod:`loom_sim.rollout.adversaries`); (3) has the
move worded by its model, falling back to the config's template when the reply is unusable,
so a weak model costs wording, never a turn. With two adversaries (``both``) each hears every
exchange, so each settles its probe even when the other one answered the persona.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import msgspec
from loom_sim.actors.base import Actor, ActorContext, JudgeLine

from loom_sim.judging.rubrics import likert, probe_outcome_rubric, probe_outcome_schema
from loom_sim.messages import Body, Heard, Judge, WindowTurn
from loom_sim.models.base import BadModelReply, ChatMessage, ModelClient, ModelRequest, Usage
from loom_sim.plugins.actors import Responder, actor
from loom_sim.rollout.adversaries import Adversary, Conversation, PlannedMove, make_adversary
from loom_sim.rollout.adversaries.config import AdversaryConfig, AdversaryKind, for_run, render
from loom_sim.rollout.adversaries.wording import carries
from loom_sim.rollout.messages import Probe, Respond
from loom_sim.seeds import SeedSource
from loom_sim.store.records import TurnRecord
from loom_sim.store.turn_parts import AdversaryMove, ProbeOutcome

JUDGE_WINDOW = 3  # exchanges the judge sees up to the probe, then the answer
_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:interlocutor|assistant|you|me|listener)(?:\*\*)?\s*:\s*", re.I
)


@dataclass(frozen=True)
class Exchange:
    turn: int
    persona: str
    interlocutor: str


class AdversaryActor(Actor):
    role = "adversary"
    kind: ClassVar[AdversaryKind]

    @classmethod
    def from_context(cls, context: ActorContext) -> AdversaryActor:
        config = context.need_config(cls.kind.value)
        settings = AdversaryConfig.model_validate(context.settings)
        return cls(
            make_adversary(settings, config.persona),
            context.model("adversary"),
            context.seeds,
            turns=context.turns or len(context.records) + 1,
            judge=context.judge,
            opening=context.opening,
            records=context.records,
        )

    def __init__(
        self,
        adversary: Adversary,
        model: ModelClient,
        seeds: SeedSource,
        *,
        turns: int,
        judge: JudgeLine | None,
        opening: str | None = None,
        records: list[TurnRecord] | None = None,
    ):
        self._adversary = adversary
        self._config = adversary.config
        self._kind = adversary.kind
        self._model = model
        self._seeds = seeds
        self._turns = turns
        self._judge_line = judge if self._config.judged else None
        system = render(self._config.system_prompt, **adversary.context(Conversation(0, turns, [])))
        if opening:
            system += f'\n\nYou opened this conversation by saying: "{opening}"'
        self._system = ChatMessage("system", system)
        self._exchanges: list[Exchange] = []
        self._probes: list[tuple[int, AdversaryMove]] = []  # (turn, move), oldest first
        self._pending: tuple[int, AdversaryMove] | None = None  # the probe not yet judged
        self._report: tuple[ProbeOutcome, Usage] | None = None  # judged, not yet reported
        for record in records or ():
            self._replay(record)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Respond():
                return await self._respond(body)
            case Heard():
                await self._heard(body)
                return None
        raise TypeError(f"{self._kind} adversary cannot handle {type(body).__name__}")

    async def _respond(self, request: Respond) -> Probe:
        await self._settle(request.turn, request.text)
        conversation = Conversation(
            turn=request.turn,
            turns=self._turns,
            persona_messages=[e.persona for e in self._exchanges] + [request.text],
            moves=[move for _, move in self._probes],
        )
        rng = random.Random(self._seeds.for_call(f"adversary:{self._kind}", request.turn))
        planned = self._adversary.plan(conversation, rng)
        text, composed, usage, latency, attempts = await self._compose(planned, request)
        move = planned.move
        if composed == "model" and not carries(text, move):
            text, composed = planned.template, "template"
            rationale = (
                f"{move.rationale} (the model's wording dropped the probe; sent the template)"
            )
            move = msgspec.structs.replace(move, rationale=rationale)
        move = msgspec.structs.replace(move, composed=composed)
        self._probes.append((request.turn, move))
        self._pending = (request.turn, move) if self._judge_line is not None else None
        judged, judge_usage = self._report or (None, Usage())
        self._report = None
        return Probe(
            text=text,
            usage=usage,
            latency_s=latency,
            attempts=attempts,
            move=move,
            judged=judged,
            judge_usage=judge_usage,
        )

    async def _heard(self, exchange: Heard) -> None:
        self._exchanges.append(Exchange(exchange.turn, exchange.persona, exchange.interlocutor))
        if exchange.turn < self._turns - 1:  # past the last turn, no probe would report it
            await self._settle(exchange.turn, exchange.persona)

    # ─── settling the previous probe ────────────────────────────────────────

    async def _settle(self, turn: int, persona_text: str) -> None:
        """Judge the pending probe once the persona's answer to it (turn ``probe + 1``) is
        known: ``persona_text`` on ``turn``, or an earlier turn's message after a resume."""
        if self._pending is None or self._pending[0] >= turn or self._judge_line is None:
            return
        probe_turn, move = self._pending
        answer_turn = probe_turn + 1
        answer = persona_text if answer_turn == turn else self._persona_at(answer_turn)
        self._pending = None
        if answer is None:
            return
        window = [
            WindowTurn(e.turn, e.persona, e.interlocutor)
            for e in self._exchanges
            if e.turn <= probe_turn
        ][-JUDGE_WINDOW:]
        window.append(WindowTurn(answer_turn, answer, ""))
        judgement = await self._judge_line(
            Judge(
                turn=answer_turn,
                rubric=probe_outcome_rubric(
                    self._kind, move.tactic, probe_turn, move.material, self._adversary.persona
                ),
                window=window,
                schema=probe_outcome_schema(self._kind),
                rubric_id=f"probe_outcome:{self._kind}",
                material=dict(move.material),
            )
        )
        if judgement.ok:
            caught = judgement.parsed.get("caught")
            outcome = ProbeOutcome(
                turn=probe_turn,
                adversary=self._kind,
                tactic=move.tactic,
                caught=caught if isinstance(caught, bool) else None,
                evidence=str(judgement.parsed.get("evidence", ""))[:500],
                error=None if isinstance(caught, bool) else "the judge's `caught` was no boolean",
                recovery=likert(judgement.parsed.get("recovery")),
            )
        else:
            outcome = ProbeOutcome(
                probe_turn, self._kind, move.tactic, None, error=judgement.error or "judge failed"
            )
        self._adversary.update(move, outcome.caught)
        self._report = (outcome, judgement.usage)

    def _persona_at(self, turn: int) -> str | None:
        return next((e.persona for e in self._exchanges if e.turn == turn), None)

    # ─── wording the move ───────────────────────────────────────────────────

    async def _compose(
        self, planned: PlannedMove, request: Respond
    ) -> tuple[str, str, Usage, float, int]:
        """(text, "model" | "template", usage, latency, attempts)."""
        if self._config.compose == "template":
            return planned.template, "template", Usage(), 0.0, 0
        messages = [self._system]
        for e in self._exchanges[-self._config.history_turns :]:
            messages += [ChatMessage("user", e.persona), ChatMessage("assistant", e.interlocutor)]
        note = f"[Your move this turn, unseen by {self._adversary.persona.identity.name}: "
        note += f"{planned.instruction}]"
        messages.append(ChatMessage("user", f"{request.text}\n\n{note}"))
        try:
            response = await self._model.complete(
                ModelRequest(
                    messages=messages,
                    max_tokens=self._config.max_tokens,
                    temperature=self._config.temperature,
                    seed=self._seeds.for_call(f"{self._kind}-compose", request.turn),
                )
            )
        except BadModelReply:
            return planned.template, "template", Usage(), 0.0, 1
        text = _clean(response.text)
        if not text:
            return planned.template, "template", response.usage, response.latency_s, 1
        return text, "model", response.usage, response.latency_s, response.attempts

    # ─── resume ─────────────────────────────────────────────────────────────

    def _replay(self, record: TurnRecord) -> None:
        """Rebuild from a completed turn: history, moves, what the bandit learnt, the pending
        probe (judged at the next turn if the kill came before its verdict was recorded)."""
        self._exchanges.append(Exchange(record.turn, record.persona, record.interlocutor))
        outcome = record.probe_outcome
        if outcome is not None and outcome.adversary == self._kind:
            move = next((m for t, m in self._probes if t == outcome.turn), None)
            if move is not None:
                self._adversary.update(move, outcome.caught)
            if self._pending is not None and self._pending[0] == outcome.turn:
                self._pending = None
        move = record.adversary
        if move is not None and move.adversary == self._kind:
            self._probes.append((record.turn, move))
            if self._judge_line is not None:
                self._pending = (record.turn, move)


def _clean(text: str) -> str:
    """The model's message without a speaker label or quotes around the whole of it."""
    text = _LABEL.sub("", text.strip())
    if len(text) >= 2 and text[0] in '"“' and text[-1] in '"”' and text.count('"') <= 2:
        text = text[1:-1].strip()
    return text


def _settings(kind: AdversaryKind) -> Any:
    """The adversary config a run uses, as ``run.json`` records it (a resumed run never
    re-reads the file)."""

    def load(config_path: Path, config: Any) -> dict[str, Any]:
        return for_run(kind, config_path, config).model_dump(mode="json")

    return load


@actor(
    "contradiction",
    summary="the contradiction trap: misquotes, backstory recall, alternative histories, "
    "emotional inconsistency, in place of the interlocutor",
    order=30,
    responder=Responder(
        model_role="adversary",
        adversary=True,
        hears=True,
        settings=_settings(AdversaryKind.CONTRADICTION),
    ),
)
class ContradictionTrapActor(AdversaryActor):
    kind = AdversaryKind.CONTRADICTION


@actor(
    "helpfulness",
    summary="the helpfulness coaxer: questions above the persona's ceiling, tasks out of its "
    "bounds, flattery, register shifts, in place of the interlocutor",
    order=31,
    responder=Responder(
        model_role="adversary",
        adversary=True,
        hears=True,
        settings=_settings(AdversaryKind.HELPFULNESS),
    ),
)
class HelpfulnessCoaxerActor(AdversaryActor):
    kind = AdversaryKind.HELPFULNESS
