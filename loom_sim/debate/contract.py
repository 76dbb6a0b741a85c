"""Persona contracts: what a debater believes, stands to lose, accepts as evidence, and would
change their mind for — the behavioural specification a debater model is held to.

A contract is data, validated here (pydantic; unknown keys are errors, each problem located at
its ``file:line:col`` by the loader) and exported as JSON Schema. Besides its prose fields it
carries a ``version`` and the ``corpus_hash`` of the material it was built from, so two
debates can tell whether their personas were the same people.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

MAX_QUOTE_CHARS = 280
#: An anchor quote is a persona's words, not a letter: at least this many words.
MIN_QUOTE_WORDS = 3

#: The markers a fenced transcript is shown between (loom_sim.judging.fence). A model that
#: copies them into an answer has copied the prompt, not written a field.
FENCE_MARKER = re.compile(r"<<<\s*(?:END\s+)?(?:TRANSCRIPT|PROBE MATERIAL)\b", re.I)


def no_fence_markers(value: str) -> str:
    if FENCE_MARKER.search(value):
        raise ValueError(
            "it holds a fenced-transcript marker (<<<TRANSCRIPT ...>>>): write the field, "
            "not the prompt's fence"
        )
    return value


Prose = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1), AfterValidator(no_fence_markers)
]
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class Strict(BaseModel):
    """Base of the debate's data: immutable, unknown keys are errors, and types are strict.

    Strict as configs are (:class:`loom_sim.config.sections.Section`): YAML reads `yes` and `on`
    as booleans, and lax validation would take ``messages: true`` for 1 and ``"60"`` for 60.
    Enum and tuple fields opt out (``strict=False``): files write them as strings and lists.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def check_id(value: str) -> str:
    if not _ID.match(value):
        raise ValueError(
            f"{value!r} is not a valid id: use lowercase letters, digits, '-' and '_' "
            "(e.g. ines-varga)"
        )
    return value


class EvidencePolicy(Strict):
    acceptable_sources: list[Prose] = Field(
        min_length=1, description="Kinds of evidence this persona accepts."
    )
    unacceptable_sources: list[Prose] = Field(
        default_factory=list, description="Kinds of evidence this persona dismisses."
    )
    weighting_rules: Prose = Field(description="How the persona weighs evidence (1-2 sentences).")
    tool_pull_triggers: Prose = Field(
        description="When the persona reaches for data or a source (1-2 sentences)."
    )


class AnchorExcerpt(Strict):
    id: str = Field(description="Unique within the contract, e.g. a1.")
    content: Annotated[str, AfterValidator(no_fence_markers)] = Field(
        min_length=1,
        max_length=MAX_QUOTE_CHARS,
        description=f"The persona's own words, at most {MAX_QUOTE_CHARS} characters.",
    )
    source: Prose = Field(description="Where it was said: a URL or an attribution.")
    date: str = Field(
        "", description="When it was said, as an ISO date (YYYY-MM-DD); empty when unknown."
    )

    @field_validator("date")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        if value and not re.fullmatch(r"\d{4}-\d{2}-\d{2}(T[0-9:.+-Z]+)?", value):
            raise ValueError(f"{value!r} is not an ISO date (write YYYY-MM-DD)")
        return value


class PersonaContract(Strict):
    """Six prose fields, the evidence policy and anchor quotes, versioned."""

    persona_id: str = Field(description="The persona this contract describes (its deck id).")
    version: str = Field(description="When the contract was built (ISO time) or a label.")
    corpus_hash: str = Field(
        description="sha256 of the corpus the contract was built from ('none' when written by "
        "hand, as in the shipped fictional decks)."
    )
    personality: Prose = Field(
        description="Communication style, rhetoric, tone, how they handle disagreement."
    )
    bias: Prose = Field(description="Ideological leanings, blind spots, axioms.")
    stakes: Prose = Field(description="What they stand to gain or lose: money, reputation, role.")
    epistemology: Prose = Field(description="What counts as evidence for them; uncertainty.")
    time_horizon: Prose = Field(description="The time scale they argue on.")
    flip_conditions: Prose = Field(description="What would change their mind.")
    evidence_policy: EvidencePolicy
    anchor_excerpts: list[AnchorExcerpt] = Field(
        min_length=1, description="Quotes that ground the persona's voice and positions."
    )

    @field_validator("persona_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_id(value)

    @field_validator("anchor_excerpts")
    @classmethod
    def _unique_ids(cls, excerpts: list[AnchorExcerpt]) -> list[AnchorExcerpt]:
        seen: set[str] = set()
        for excerpt in excerpts:
            if excerpt.id in seen:
                raise ValueError(f"two anchor excerpts have the id {excerpt.id!r}")
            seen.add(excerpt.id)
        return excerpts
