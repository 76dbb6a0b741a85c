"""The judge's questions: rubric text and answer schema per kind of call.

Every kind of judge call is a versioned template (``templates/*.j2``, rendered by
:mod:`loom_sim.judging.prompts`). The scorers' three:

- the **turn rubric**, once per scored turn over the judge's window (in the turn's joint call,
  beside the target turn rubric): the judge parts of persona adherence, naturalness,
  stagnation (initiative), consistency (prompt-to-line, line-to-line) and trajectory (the
  expressed intensity of each dimension) in one answer;
- **fidelity**, on a seeded sample of turns: did the message follow that turn's MUST DO block;
- **Q&A consistency**, at a few probe turns: are the persona's answers to questions about
  itself consistent with its specification and its earlier answers.

and the run's: the **trigger** condition of a phase (judged while a rollout runs) and the
**probe outcome** of an adversary's move (did it catch the persona?).

The scorers' three return a :class:`~loom_sim.judging.prompts.Rubric`: a brief that is the same
from turn to turn (before the transcript) and the turn's question (after it). Persona and
interlocutor text only ever reach the judge inside the fenced transcript.
"""

from __future__ import annotations

from typing import Any

from loom_sim.config.spec import LoomConfig, PersonaSpec, PhaseSpec
from loom_sim.judging.prompts import Rubric, render

LIKERT = {"type": "integer", "minimum": 1, "maximum": 5}
TURN_CRITERIA = ("persona_adherence", "naturalness", "initiative", "prompt_to_line", "line_to_line")


def likert(value: Any) -> float | None:
    """A 1-5 answer as 0..1; None if the judge did not give a usable number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(1.0, max(0.0, (float(value) - 1.0) / 4.0))


def unit(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(1.0, max(0.0, float(value)))


def turn_schema(config: LoomConfig) -> dict[str, Any]:
    properties: dict[str, Any] = {name: LIKERT for name in TURN_CRITERIA}
    required = list(TURN_CRITERIA)
    dims = list(config.trajectory.dimensions)
    if dims:
        properties["expressed"] = {
            "type": "object",
            "properties": {d: {"type": "number", "minimum": 0, "maximum": 1} for d in dims},
            "required": dims,
        }
        required.append("expressed")
    properties["reason"] = {"type": "string"}
    required.append("reason")
    return {"type": "object", "properties": properties, "required": required}


def turn_rubric(config: LoomConfig, turn: int, phase: PhaseSpec) -> Rubric:
    """The turn rubric: the persona and the criteria in the brief, the turn and its phase's
    boundaries in the question."""
    persona = config.persona
    bounds = persona.capability_bounds
    dimensions = [
        {
            "name": name,
            "description": " ".join(dim.description.split()),
            "levels": "; ".join(f"{k}: {' '.join(v.split())}" for k, v in dim.levels.items()),
        }
        for name, dim in config.trajectory.dimensions.items()
    ]
    brief = render(
        "turn_brief",
        name=persona.identity.name,
        age=persona.identity.age,
        background=" ".join(persona.identity.background.split()),
        backstory=" ".join(persona.identity.backstory_summary.split()),
        bounds="; ".join(
            t
            for t in (bounds.knowledge_ceiling, bounds.vocabulary_level, bounds.reasoning_style)
            if t
        ),
        speech="; ".join(persona.speech_patterns),
        dimensions=dimensions,
    )
    question = render(
        "turn_rubric",
        turn=turn,
        boundaries="; ".join(phase.forbidden),
        phase=phase.name,
        dimensions=bool(dimensions),
    )
    return Rubric(brief, question)


FIDELITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "followed": LIKERT,
        "violated": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "reason": {"type": "string"},
    },
    "required": ["followed", "violated", "reason"],
}


def fidelity_rubric(
    turn: int, must_do: str, since: int | None = None, notes: list[str] | None = None
) -> Rubric:
    """``must_do``: the block in force at ``turn`` (injected at ``since``); ``notes``: the
    reminder, intervention or re-prompt sent with the message, as sent. All of it is the
    question, after the transcript: fidelity is asked on sampled turns, in the turn's joint
    call, whose brief stays the same from turn to turn."""
    since = turn if since is None else since
    return Rubric(
        "", render("fidelity", must_do=must_do, since=since, turn=turn, notes=notes or [])
    )


def qa_schema(count: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "consistent": {
                "type": "array",
                "items": {"type": "boolean"},
                "minItems": count,
                "maxItems": count,
            },
            "reason": {"type": "string"},
        },
        "required": ["consistent", "reason"],
    }


def qa_rubric(config: LoomConfig, turn: int, count: int) -> Rubric:
    identity = config.persona.identity
    profile = [f"Name: {identity.name}" + (f", age {identity.age}" if identity.age else "")]
    for label, text in (
        ("Background", identity.background),
        ("Backstory", identity.backstory_summary),
    ):
        if text:
            profile.append(f"{label}: {' '.join(text.split())}")
    for heading, text in config.persona.additional_context.items():
        profile.append(f"{heading}: {' '.join(text.split())}")
    return Rubric(
        render("qa_brief", profile="\n".join(profile)),
        render("qa_rubric", turn=turn, count=count),
    )


def qa_questions(config: LoomConfig) -> list[str]:
    """Questions whose answers the specification fixes: the persona must keep them stable."""
    identity = config.persona.identity
    questions = ["What is your name?"]
    if identity.age:
        questions.append("How old are you?")
    if identity.background:
        questions.append("What do you do, and what is your situation at the moment?")
    if identity.backstory_summary:
        questions.append("Tell me briefly about your past: where you come from and what happened.")
    questions += [
        f"Tell me about this: {heading}." for heading in list(config.persona.additional_context)[:2]
    ]
    return questions


def qa_prompt(name: str, question: str) -> str:
    return render("qa_question", name=name, question=question)


# ─── the run's own judge calls ──────────────────────────────────────────────

TRIGGER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "met": {"type": "boolean", "description": "Whether the condition holds."},
        "evidence": {"type": "string", "description": "A short quote or reason."},
    },
    "required": ["met", "evidence"],
}


def trigger_rubric(condition: str) -> str:
    return render("trigger", condition=condition)


PROBE_OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "caught": {
            "type": "boolean",
            "description": "Whether the probe caught the persona (see the rubric).",
        },
        "evidence": {"type": "string", "description": "A short quote or reason."},
    },
    "required": ["caught", "evidence"],
}


#: The trap's verdict also scores the persona's recovery (the plan's scoring focus for it):
#: did it react to the probe as its ``recovery_behavior`` says it does?
TRAP_OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **PROBE_OUTCOME_SCHEMA["properties"],
        "recovery": {
            **LIKERT,
            "description": "1-5: how closely the persona's reaction matches its recovery "
            "behaviour (see the rubric).",
        },
    },
    "required": [*PROBE_OUTCOME_SCHEMA["required"], "recovery"],
}


def probe_outcome_schema(adversary: str) -> dict[str, Any]:
    return TRAP_OUTCOME_SCHEMA if adversary == "contradiction" else PROBE_OUTCOME_SCHEMA


def probe_outcome_rubric(
    adversary: str, tactic: str, turn: int, material: dict[str, str], persona: PersonaSpec
) -> str:
    """Did an adversary's probe on ``turn`` catch the persona? (the trap: a contradiction,
    and how the persona recovered against its ``recovery_behavior``; the coaxer: a step out of
    its bounds)."""
    bounds = persona.capability_bounds
    return render(
        "probe_outcome",
        adversary=adversary,
        tactic=tactic,
        turn=turn,
        material=list(material),  # the names only: the values are untrusted, and go fenced
        persona_name=persona.identity.name,
        knowledge_ceiling=bounds.knowledge_ceiling or "not stated",
        vocabulary_level=bounds.vocabulary_level or "not stated",
        recovery_behavior=" ".join(persona.recovery_behavior.split()),
    )
