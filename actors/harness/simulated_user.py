"""The simulated user: a persona with a goal, deciding what to type next.

Protocol: ``PlanAction`` -> ``PlannedAction`` (an utterance, a command, or giving up);
``Observed`` (a tell) after every turn, so the user remembers what it did, what came back and
how it felt about it.

What the user is shown is what a real user would know: who they are, their project, their goal,
the files they brought, the tools the job needs and the program's commands (its ``/help``),
and the session so far. It never sees the success criteria, the scorecard or its weights: an
actor that sees the rubric optimises the rubric.

The model answers in JSON (schema-constrained where the provider can), with the command name
limited to the program's abilities. A reply that does not parse is asked for again; one that
still does not is read as what the user typed, and says so in ``reason``. Patience is kept in
code: after ``patience`` reflections in a row below ``give_up_below_confidence`` the user
gives up, whatever the model would say.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from loom_sim.actors.base import Actor, ActorContext, ProtocolError

from loom_sim.harness.messages import (
    Action,
    Observed,
    PlanAction,
    PlannedAction,
)
from loom_sim.harness.packs import Persona, Policy, Scenario
from loom_sim.harness.packs.spec import Ability
from loom_sim.messages import Body
from loom_sim.models.base import BadModelReply, ChatMessage, ModelClient, ModelRequest, Usage
from loom_sim.models.json_repair import parse_json
from loom_sim.plugins.actors import actor
from loom_sim.seeds import SeedSource

PROMPT_VERSION = "user-2"
_REPLY_CHARS = 1200  # of each program reply the user re-reads
_EXPERTISE = {
    "novice": "You mostly write plain requests in your own words; you rarely type commands.",
    "intermediate": "You mix plain requests with the commands you have seen work.",
    "expert": "You mostly type explicit commands, with their arguments.",
}


@dataclass
class UserSetup:
    """What the simulated user is built with (``ActorContext.settings``)."""

    persona: Persona
    scenario: Scenario
    policy: Policy
    inputs: list[str]  # the file names the user brought
    abilities: list[Ability]  # the program's commands; empty when it offers none
    past: list[Observed] = field(default_factory=list)  # a resumed session's turns
    inputs_loaded: bool = True  # the target's setup lines hand the files over


def action_from_line(line: str) -> Action:
    """What a typed line is: ``/name args`` is a command, anything else an utterance."""
    text = " ".join(line.split())
    if text.startswith("/") and len(text) > 1:
        try:
            name, *args = shlex.split(text[1:])
        except ValueError:
            name, *args = text[1:].split()
        return Action("command", text, name, args)
    return Action("utterance", text)


SAY, GIVE_UP = "say", "give_up"
TEXT_LIMIT = 160  # characters of the text field: a line a person types, not an essay


def action_schema(abilities: list[Ability], may_give_up: bool) -> dict[str, Any]:
    """One choice and one bounded text: ``say`` (write ``text`` to the assistant), a command's
    name (type ``/name text``), or ``give_up`` (``text`` says why). The command names are an
    enum, so a schema-constrained model can only type commands that exist; the bound keeps a
    small model from rambling until its token limit."""
    choices = [SAY, *(a.name for a in abilities)] + ([GIVE_UP] if may_give_up else [])
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": choices},
            "text": {"type": "string", "maxLength": TEXT_LIMIT},
        },
        "required": ["action", "text"],
    }


def system_prompt(setup: UserSetup) -> str:
    persona, scenario = setup.persona, setup.scenario
    lines = [
        "You are role-playing a real person using a chat program, turn by turn. You are the "
        "USER: you never answer as the program or as an assistant, and you only mention files "
        "and images that exist (the ones you brought, and outputs the program reported).",
        f"Who you are: {persona.who}",
    ]
    if persona.goals:
        lines.append("What you want in general: " + "; ".join(persona.goals))
    if persona.habits:
        lines.append("Your habits: " + "; ".join(persona.habits))
    lines.append(_EXPERTISE[persona.expertise])
    if scenario.context:
        lines.append(f"Your project: {scenario.context}")
    lines.append(f"What you want from this session: {scenario.goal}")
    if setup.inputs:
        how = "already loaded" if setup.inputs_loaded else "the program cannot see them"
        lines.append(f"The files you brought ({how}): " + ", ".join(setup.inputs))
    if setup.abilities:
        groups = [" or ".join(g) for g in scenario.groups()]
        if groups:
            lines.append("Tools you know the job needs: " + "; ".join(groups))
        lines.append("The program's commands:")
        lines += [f"  {a.usage or '/' + a.name} — {a.summary}" for a in setup.abilities]
        lines.append(
            'Each turn, answer with one JSON object: {"action": NAME, "text": ARGUMENTS} to type '
            'the command /NAME ARGUMENTS, or {"action": "say", "text": MESSAGE} to write to the '
            "assistant in your own words."
        )
    else:
        lines.append(
            'Each turn, answer with one JSON object: {"action": "say", "text": MESSAGE}, the '
            "message you write to the assistant."
        )
    lines.append(
        'Once you have really tried, you may leave with {"action": "give_up", "text": WHY}.'
    )
    return "\n".join(lines)


@actor("simulated_user", summary="a persona with a goal, planning what to type next", order=60)
class SimulatedUser(Actor):
    role = "simulated_user"

    def __init__(self, model: ModelClient, seeds: SeedSource, setup: UserSetup):
        self._model = model
        self._seeds = seeds
        self.setup = setup
        self._system = system_prompt(setup)
        self.past: list[Observed] = list(setup.past)

    @classmethod
    def from_context(cls, context: ActorContext) -> SimulatedUser:
        if not isinstance(context.settings, UserSetup):
            raise ProtocolError("the simulated user needs a UserSetup as its settings")
        return cls(context.model("user"), context.seeds, context.settings)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case PlanAction():
                return await self._plan(body)
            case Observed():
                self.past.append(body)
                return None
        raise TypeError(f"the simulated user cannot handle {type(body).__name__}")

    # ── planning ──

    def _disheartened(self) -> int:
        """Reflections in a row, most recent first, below the policy's confidence floor."""
        floor = self.setup.policy.give_up_below_confidence
        count = 0
        for seen in reversed(self.past):
            if seen.confidence is None or seen.confidence >= floor:
                break
            count += 1
        return count

    def _messages(self, request: PlanAction) -> list[ChatMessage]:
        messages = [ChatMessage("system", self._system)]
        shown = self.past[-self.setup.policy.history_turns :]
        for seen in shown:
            messages.append(ChatMessage("assistant", seen.action.text))
            said = seen.reply.strip() or "(no output)"
            note = (
                f"\n(Your note to yourself: {seen.next_hypothesis})" if seen.next_hypothesis else ""
            )
            prefix = "The program answered" if seen.turn >= 0 else "The program started"
            messages.append(ChatMessage("user", f"{prefix}:\n{said[:_REPLY_CHARS]}{note}"))
        ask = f"Turn {request.turn}. What do you type next? Answer with the JSON object only."
        if request.feedback:
            ask = f"Your last answer could not be used: {request.feedback}\n{ask}"
        if messages[-1].role == "user":
            messages[-1] = ChatMessage("user", messages[-1].content + "\n\n" + ask)
        else:
            messages.append(ChatMessage("user", ask))
        return messages

    async def _plan(self, request: PlanAction) -> PlannedAction:
        patience = self.setup.persona.patience
        if self._disheartened() >= patience:
            why = f"patience ran out: {patience} disheartening turns in a row"
            return PlannedAction(Action("utterance", "I give up."), gave_up=True, reason=why)
        usage, raw, error, said = Usage(), "", "", ""
        tries = 2
        for attempt in range(tries):
            response = await self._model.complete(
                ModelRequest(
                    messages=self._messages(request),
                    max_tokens=self.setup.policy.max_tokens,
                    temperature=self.setup.policy.temperature,
                    seed=self._seeds.for_call("user", request.turn, 10 * request.attempt + attempt),
                    json_schema=action_schema(
                        self.setup.abilities, request.turn >= self.setup.policy.give_up_after
                    ),
                )
            )
            usage, raw = usage + response.usage, response.text
            parsed: Any = None
            try:
                parsed = response.parsed if response.parsed is not None else parse_json(raw)
                return self._read(parsed, raw, usage, attempt + 1, request.turn)
            except BadModelReply as exc:
                error = str(exc)
                if isinstance(parsed, dict) and str(parsed.get("text") or "").strip():
                    said = str(parsed["text"])  # JSON with an unusable choice: its words remain
        if said:
            line = said
        elif raw.lstrip().startswith(("{", "[")):
            line = ""  # broken JSON is not what a person types
        else:
            line = next((ln.strip() for ln in raw.splitlines() if ln.strip()), "")
        if not line:
            raise BadModelReply(f"the simulated user's model gave no usable action ({error})")
        action = action_from_line(line)
        reason = f"read as typed: the model's JSON was unusable ({error})"
        return PlannedAction(action, raw=raw, usage=usage, attempts=tries, reason=reason)

    def _read(self, parsed: Any, raw: str, usage: Usage, attempts: int, turn: int) -> PlannedAction:
        if not isinstance(parsed, dict):
            raise BadModelReply(f"the action is a {type(parsed).__name__}, not a JSON object")
        choice = str(parsed.get("action", "")).strip().lstrip("/")
        text = " ".join(str(parsed.get("text") or "").split())
        names = {a.name for a in self.setup.abilities}
        if choice == GIVE_UP and turn >= self.setup.policy.give_up_after:
            why = text or "the user chose to leave"
            action = Action("utterance", "I give up.")
            return PlannedAction(action, True, why, raw, usage, attempts)
        if choice == GIVE_UP:  # too early to leave: what it says is said to the assistant
            note = "an early give-up, sent as a message"
            action = action_from_line(text or "I'm not sure this is working.")
            return PlannedAction(action, reason=note, raw=raw, usage=usage, attempts=attempts)
        if choice in names:
            action = action_from_line(f"/{choice} {text}".strip())
        elif choice == SAY:
            if not text:
                raise BadModelReply("the message is empty")
            action = action_from_line(text)
        else:
            raise BadModelReply(f"{choice!r} is neither `say` nor one of the program's commands")
        return PlannedAction(action, raw=raw, usage=usage, attempts=attempts)
