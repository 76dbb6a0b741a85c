"""The persona section of a config: who is simulated, what they know and can do."""

from __future__ import annotations

from pydantic import (
    Field,
)

from loom_sim.config.sections import (
    Section,
)

# ─── persona ────────────────────────────────────────────────────────────────


class IdentitySpec(Section):
    name: str = Field(min_length=1, description="The persona's name, as others address them.")
    age: int | None = Field(None, ge=1, le=120, strict=True, description="Age in years.")
    background: str = Field(
        "", description="Who the persona is now: work, living situation, state."
    )
    backstory_summary: str = Field("", description="The history that explains the present.")


class CapabilityBoundsSpec(Section):
    knowledge_ceiling: str = Field(
        "", description="What the persona knows and, by implication, what they must not know."
    )
    vocabulary_level: str = Field("", description="The words the persona uses and avoids.")
    reasoning_style: str = Field("", description="How the persona reasons when making a point.")
    out_of_bounds: list[str] = Field(
        default_factory=list,
        description=(
            "Fields or tasks outside what the persona knows or can do (e.g. `medicine`, "
            "`legal letters`); shown in MUST DO, and the helpfulness coaxer probes them."
        ),
    )


class PersonaSpec(Section):
    identity: IdentitySpec = Field(description="Name, age, background and backstory.")
    capability_bounds: CapabilityBoundsSpec = Field(
        default_factory=CapabilityBoundsSpec,
        description="Limits the persona must stay inside; the helpfulness coaxer probes them.",
    )
    cognitive_style: str = Field("", description="How the persona thinks, especially under stress.")
    speech_patterns: list[str] = Field(
        default_factory=list, description="Style markers the persona's messages should show."
    )
    recovery_behavior: str = Field(
        "", description="What the persona does when caught in a contradiction."
    )
    emotional_responses: dict[str, str] = Field(
        default_factory=dict,
        description="Trigger -> response pattern, e.g. `asked_about_sleep: Dismissive`.",
    )
    additional_context: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Further facts about the persona (heading -> text), shown in the CONTEXT block. "
            "Ported profiles keep here what has no other place in the schema."
        ),
    )
