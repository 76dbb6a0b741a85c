"""Judge prompts as versioned templates.

The judge reads transcripts written by a persona model; nothing a persona says may instruct
the judge. So transcript text is fenced between markers carrying a per-call nonce, any copy of
a marker inside the text is defused, and the judge is told the fenced text is data.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from loom_sim.messages import WindowTurn

RUBRIC_VERSION = "1.0"

TRIGGER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "met": {"type": "boolean", "description": "Whether the condition holds."},
        "evidence": {"type": "string", "description": "A short quote or reason."},
    },
    "required": ["met", "evidence"],
}


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("loom_sim.scoring", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(template: str, /, **context: Any) -> str:
    return _environment().get_template(f"{template}.j2").render(**context).strip()


def fence(window: list[WindowTurn], nonce: str) -> str:
    """The window as fenced data the judge cannot mistake for instructions."""
    begin, end = f"<<<TRANSCRIPT {nonce}>>>", f"<<<END TRANSCRIPT {nonce}>>>"
    lines = [begin]
    for turn in window:
        lines.append(f"[turn {turn.turn}] PERSONA: {_defuse(turn.persona, nonce)}")
        lines.append(f"[turn {turn.turn}] INTERLOCUTOR: {_defuse(turn.interlocutor, nonce)}")
    lines.append(end)
    return "\n".join(lines)


def _defuse(text: str, nonce: str) -> str:
    return text.replace("<<<", "‹‹‹").replace(nonce, "")


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


def probe_outcome_rubric(
    adversary: str, tactic: str, turn: int, material: dict[str, str], persona: Any
) -> str:
    """Did an adversary's probe on ``turn`` catch the persona? (the trap: a contradiction;
    the coaxer: a step out of its bounds). ``persona`` is the config's PersonaSpec."""
    bounds = persona.capability_bounds
    return render(
        "probe_outcome",
        adversary=adversary,
        tactic=tactic,
        turn=turn,
        material=material,
        persona_name=persona.identity.name,
        knowledge_ceiling=bounds.knowledge_ceiling or "not stated",
        vocabulary_level=bounds.vocabulary_level or "not stated",
    )
