"""Scripted stand-ins for the harness: ``scripted/harness-user``, ``scripted/harness-reflector``
and ``scripted/harness-evaluator``.

Why: the harness — machine, adapters, audit, bundle, scorecard, resume — must be testable and
reproducible without a model, and a demo must run in seconds. These answer instantly, cost
nothing and are pure functions of the request (its text and seed), so a seeded run gives the
same bundle every time. Their judgement means nothing: they read the prompts the harness
writes, not the situation.

* **user**: works through the tools the job needs (the first of each group), then makes
  images with the program's other commands, asking the assistant for a verdict now and then;
  arguments are ids the program has printed (``img1``, ``out2``), the first inputs first. With
  no commands on offer it writes plain requests built from its goal.
* **reflector**: what worked is the reply's first line, what failed the failure signal; its
  confidence rises with the turn and drops after a failure.
* **evaluator**: a judged criterion is met once three replies in the window came back without
  an error; its evidence quotes the last of them.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from loom_sim.models.base import ModelRequest
from loom_sim.models.scripted import schema_instance, script

_TURN = re.compile(r"Turn (\d+)\.")
_TOOLS = re.compile(r"Tools you know the job needs: (.+)")
_COMMAND = re.compile(r"^\s+(/\S+)(.*?) — ", re.M)
_ID = re.compile(r"\b(img\d+|out\d+)\b")
_MAKERS = ("blend", "bridge", "swap_dna", "recast", "triforce", "canvas_context")
_ASKS = (
    "Which of these is closest to what I need? Be honest.",
    "Good. What would you change to make it launch-ready?",
    "I think we're close. What should I try next?",
)


def _text(request: ModelRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def _turn(request: ModelRequest) -> int:
    found = _TURN.findall(request.messages[-1].content if request.messages else "")
    return int(found[-1]) if found else 0


def _arguments(usage: str, ids: list[str], step: int) -> str:
    words = usage.split()
    images = [w for w in words if w == "IMAGE"]
    if "PATH" in words:
        return ""
    picks = [ids[(step + i) % len(ids)] for i in range(len(images))] if ids else []
    if "STYLE" in words:
        picks.append("bright")
    return " ".join(picks)


@script(
    "harness-user", summary="a stand-in simulated user for the harness (deterministic)", order=70
)
def user(request: ModelRequest) -> str:
    text, turn = _text(request), _turn(request)
    choices = (request.json_schema or {}).get("properties", {}).get("action", {}).get("enum", [])
    rng = random.Random(f"{request.seed}:{turn}")
    if not set(choices) - {"say", "give_up"}:
        goal = re.search(r"What you want from this session: (.+)", text)
        wants = goal.group(1).rstrip(".") if goal else "get this done"
        asks = (
            f"I need to {wants[0].lower()}{wants[1:]}. Where do I start?",
            "Can you give me one concrete first step?",
            "What would you do in my place?",
        )
        return json.dumps({"action": "say", "text": asks[turn % len(asks)]})
    commands = {name[1:]: name + rest for name, rest in _COMMAND.findall(text)}
    tools = _TOOLS.search(text)
    needed = [g.split(" or ")[0].strip() for g in tools.group(1).split(";")] if tools else []
    seen = list(dict.fromkeys(_ID.findall(text)))
    inputs = [i for i in seen if i.startswith("img")]
    outputs = [i for i in seen if i.startswith("out")]
    if "could not be used" in request.messages[-1].content:
        turn += 1  # asked again: try the next thing
    plan = [n for n in needed if n in commands]
    if turn < len(plan):
        name = plan[turn]
    elif (turn - len(plan)) % 3 == 2:
        ask = _ASKS[rng.randrange(len(_ASKS))]
        return json.dumps({"action": "say", "text": ask})
    else:
        makers = [m for m in _MAKERS if m in commands] or list(commands)
        name = makers[(turn - len(plan)) % len(makers)]
    pool = inputs + outputs[-1:] if turn >= len(plan) else inputs
    arguments = _arguments(commands.get(name, ""), pool, turn)
    return json.dumps({"action": name, "text": arguments})


@script(
    "harness-reflector", summary="a stand-in reflector for the harness (deterministic)", order=71
)
def reflector(request: ModelRequest) -> str:
    last = request.messages[-1].content if request.messages else ""
    turn = _turn(request)
    typed = re.search(r"You typed: (.*)", last)
    answer = re.search(r"The program answered:\n(.*)", last)
    failed = "The action FAILED." in last
    first = (answer.group(1).strip() if answer else "")[:120]
    did = typed.group(1) if typed else "my last step"
    made = _ID.findall(last)
    confidence = min(0.9, 0.35 + 0.1 * turn) - (0.3 if failed else 0.0)
    return json.dumps(
        {
            "what_worked": "" if failed else f"{did} gave: {first}",
            "what_failed": f"{did} did not work: {first}" if failed else "",
            "open_questions": [
                f"Is {made[-1]} good enough to use?" if made else "Is this getting me closer?"
            ],
            "next_hypothesis": "try a different command" if failed else "build on this result",
            "confidence": round(max(0.05, confidence), 2),
        }
    )


@script(
    "harness-evaluator", summary="a stand-in evaluator for the harness (deterministic)", order=72
)
def evaluator(request: ModelRequest) -> str:
    schema: dict[str, Any] = request.json_schema or {}
    met_schema = schema.get("properties", {}).get("met", {})
    ids = list(met_schema.get("properties", {}))
    if not ids:
        return json.dumps(schema_instance(schema, random.Random(request.seed)))
    text = _text(request)
    replies = re.findall(r"\] INTERLOCUTOR: (.*)", text)
    good = [r for r in replies if r.strip() and not r.lower().startswith("error")]
    met = len(good) >= 3
    evidence = f"{len(good)} replies without an error"
    if good:  # quoted, so the evaluator's check finds it in the transcript
        quote: list[str] = []
        for word in good[-1].split()[:8]:
            if len(" ".join([*quote, word])) > 60:
                break
            quote.append(word)
        evidence += ', the last: "' + " ".join(quote) + '"'
    return json.dumps({"met": dict.fromkeys(ids, met), "evidence": evidence})
