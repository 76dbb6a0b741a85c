"""The reflector: the simulated user's open pondering, one record per turn.

Protocol: ``Reflect`` -> ``Reflected``. The record is a fixed contract — turn,
action_taken, observed_signals, what_worked, what_failed, open_questions, next_hypothesis,
confidence 0..1 — and is schema-checked. The facts of the turn (which turn, what was done,
what was observed) are filled in from the session, never from the model; the model writes the
five judgements, in JSON.

Nothing is dropped silently. An answer that parses but bends the schema is *repaired* where the
intent is plain (a confidence of ``"0.7"`` or ``70`` is 0.7, one open question given as a
string is a list of one) and marked ``repaired``; an answer missing a field is *asked for
again*, saying what was missing; after ``reflection_attempts`` the record is written anyway,
marked ``invalid`` with the error, its judgements empty and its confidence 0, so the turn
still has its reflection and the scorecard counts it as invalid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from loom_sim.actors.base import Actor, ActorContext, ProtocolError

from loom_sim.harness.messages import (
    Action,
    Reflect,
    Reflected,
    Reflection,
)
from loom_sim.harness.packs import Persona, Policy, Scenario
from loom_sim.messages import Body
from loom_sim.models.base import BadModelReply, ChatMessage, ModelClient, ModelRequest, Usage
from loom_sim.models.json_repair import parse_json
from loom_sim.plugins.actors import actor
from loom_sim.seeds import SeedSource

PROMPT_VERSION = "reflector-2"
TEXT_FIELDS = ("what_worked", "what_failed", "next_hypothesis")
#: What the model writes; the rest of the record is the session's.
MODEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    # Bounded (a note to oneself; a small model must not ramble) and ordered so that a reply
    # cut off at its token limit loses only the end of the list, which the parser can close.
    "properties": {
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "what_worked": {"type": "string", "maxLength": 100},
        "what_failed": {"type": "string", "maxLength": 100},
        "next_hypothesis": {"type": "string", "maxLength": 100},
        "open_questions": {
            "type": "array",
            "items": {"type": "string", "maxLength": 80},
            "maxItems": 3,
        },
    },
    "required": ["confidence", "what_worked", "what_failed", "next_hypothesis", "open_questions"],
}
_REPLY_CHARS = 1500


@dataclass
class ReflectorSetup:
    persona: Persona
    scenario: Scenario
    policy: Policy


def action_record(action: Action) -> dict[str, Any]:
    """The normalized action record a reflection's ``action_taken`` holds."""
    record: dict[str, Any] = {"kind": action.kind, "text": action.text}
    if action.kind == "command":
        record.update(name=action.name, args=list(action.args))
    return record


def repair(parsed: Any, cut_off: bool = False) -> tuple[dict[str, Any], bool]:
    """The five judgements from a parsed answer, and whether any had to be repaired; raises
    :class:`BadModelReply` naming what is missing or unusable.

    ``cut_off``: the model ran out of tokens mid-answer. Asking again would cut it off again,
    so the judgements it never reached are written as empty — once it has given its
    confidence, which comes first — and the record is marked repaired."""
    if not isinstance(parsed, dict):
        raise BadModelReply(f"the reflection is a {type(parsed).__name__}, not a JSON object")
    missing = [k for k in MODEL_SCHEMA["required"] if k not in parsed]
    repaired = False
    if missing and cut_off and "confidence" in parsed:
        empty: dict[str, Any] = {"open_questions": []}
        parsed = {**{k: empty.get(k, "") for k in missing}, **parsed}
        missing, repaired = [], True
    if missing:
        raise BadModelReply(f"the reflection lacks {', '.join(missing)}")
    out: dict[str, Any] = {}
    for key in TEXT_FIELDS:
        value = parsed[key]
        if not isinstance(value, str):
            if value is None or isinstance(value, dict | list):
                raise BadModelReply(f"{key} must be text")
            value, repaired = str(value), True
        out[key] = " ".join(value.split())
    questions = parsed["open_questions"]
    if isinstance(questions, str):
        questions, repaired = [questions] if questions.strip() else [], True
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        raise BadModelReply("open_questions must be a list of questions")
    out["open_questions"] = [" ".join(q.split()) for q in questions if q.strip()]
    confidence = parsed["confidence"]
    if isinstance(confidence, str):
        try:
            confidence, repaired = float(confidence.strip().rstrip("%")), True
        except ValueError:
            raise BadModelReply(f"confidence {confidence!r} is not a number") from None
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise BadModelReply("confidence must be a number from 0 to 1")
    if 1 < confidence <= 100:  # a percentage
        confidence, repaired = confidence / 100, True
    if not 0 <= confidence <= 1:
        raise BadModelReply(f"confidence {confidence} is outside 0..1")
    out["confidence"] = round(float(confidence), 4)
    return out, repaired


@actor("reflector", summary="the simulated user's per-turn reflection, schema-checked", order=61)
class Reflector(Actor):
    role = "reflector"

    def __init__(self, model: ModelClient, seeds: SeedSource, setup: ReflectorSetup):
        self._model = model
        self._seeds = seeds
        self.setup = setup

    @classmethod
    def from_context(cls, context: ActorContext) -> Reflector:
        if not isinstance(context.settings, ReflectorSetup):
            raise ProtocolError("the reflector needs a ReflectorSetup as its settings")
        return cls(context.model("reflector"), context.seeds, context.settings)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Reflect():
                return await self._reflect(body)
        raise TypeError(f"the reflector cannot handle {type(body).__name__}")

    def _prompt(self, request: Reflect) -> list[ChatMessage]:
        persona, scenario = self.setup.persona, self.setup.scenario
        system = (
            f"You are {persona.who} You are using a chat program to reach this goal: "
            f"{scenario.goal} After each turn you write down, honestly and in a few words "
            "each, how confident you are (0 to 1) that you will reach the goal, what worked, "
            "what failed, what you will try next, and the questions you still have. Answer "
            "with one JSON object with the keys confidence, what_worked, what_failed, "
            "next_hypothesis and open_questions (a list)."
        )
        signals = "\n".join(f"- {s}" for s in request.signals) or "- nothing notable"
        outcome = "The action FAILED." if request.failed else ""
        user = (
            f"Turn {request.turn}. You typed: {request.action.text}\n"
            f"The program answered:\n{request.reply[:_REPLY_CHARS] or '(no output)'}\n"
            f"What you noticed:\n{signals}\n{outcome}\nWrite your reflection now."
        )
        return [ChatMessage("system", system), ChatMessage("user", user)]

    async def _reflect(self, request: Reflect) -> Reflected:
        messages = self._prompt(request)
        usage, raw, error = Usage(), "", "no attempt made"
        attempts = self.setup.policy.reflection_attempts
        for attempt in range(attempts):
            response = await self._model.complete(
                ModelRequest(
                    messages=messages,
                    max_tokens=300,
                    temperature=0.3,
                    seed=self._seeds.for_call("reflector", request.turn, attempt),
                    json_schema=MODEL_SCHEMA,
                )
            )
            usage, raw = usage + response.usage, response.text
            try:
                parsed = response.parsed if response.parsed is not None else parse_json(raw)
                fields, repaired = repair(parsed, cut_off=response.finish_reason == "length")
                record = self._record(request, fields)
            except BadModelReply as exc:
                error = str(exc)
                messages = [
                    *messages[:2],
                    ChatMessage("assistant", raw[:800]),
                    ChatMessage(
                        "user",
                        f"That cannot be used: {error}. Answer again with one "
                        "JSON object holding all five keys.",
                    ),
                ]
                continue
            status = "repaired" if repaired else "valid"
            return Reflected(record, status, attempt + 1, None, raw, usage)
        empty = {
            "what_worked": "",
            "what_failed": "",
            "open_questions": [],
            "next_hypothesis": "",
            "confidence": 0.0,
        }
        return Reflected(self._record(request, empty), "invalid", attempts, error, raw, usage)

    def _record(self, request: Reflect, fields: dict[str, Any]) -> Reflection:
        data = {
            "turn": request.turn,
            "action_taken": action_record(request.action),
            "observed_signals": list(request.signals),
            **fields,
        }
        try:
            return msgspec.convert(data, Reflection)  # the reflection's schema, checked
        except msgspec.ValidationError as exc:
            raise BadModelReply(f"the reflection breaks its schema: {exc}") from None
