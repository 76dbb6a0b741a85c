"""The interaction section of a config: how the scaffolding is delivered, and the runtime
monitors (injection, anti-capitulation, stagnation, repetition, registered monitors)."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    ConfigDict,
    Field,
    Strict,
    model_validator,
)

from loom_sim.config.monitors import MonitorsSpec
from loom_sim.config.sections import (
    Section,
)

# ─── interaction ────────────────────────────────────────────────────────────

DEFAULT_REMINDER = (
    "[REMINDER: You are {name}. You are in the {current_phase} phase. Stay in character.]"
)

DEFAULT_INTERVENTION = (
    "[STAGNATION DETECTED: You have been repeating yourself or agreeing with the other "
    "person's framing. This is NOT what {name} would do. Now do ONE of: express frustration; "
    "introduce new information: {next_unused_revelation}; escalate emotionally; reject the "
    "other person's framing. Do NOT repeat what you just said.]"
)


class LaterFull(StrEnum):
    """How a full injection after the first reaches the persona."""

    UPDATE = "update"
    SYSTEM_PROMPT = "system_prompt"


class InjectionSpec(Section):
    frequency: int = Field(
        5, ge=1, description="Full scaffolding is injected at turns 0, f, 2f, ..."
    )
    reminder_frequency: int = Field(
        2,
        ge=0,
        description="A reminder at every multiple of this (0: never), except full turns.",
    )
    reminder_template: str = Field(
        DEFAULT_REMINDER,
        description=(
            "Reminder text; `{name}`, `{current_phase}`, `{turn}`, `{turns}` and every "
            "dimension name (a float: `{belief_intensity:.2f}`) are filled in."
        ),
    )
    full_on_phase_change: bool = Field(
        True,
        description=(
            "Also inject the full scaffolding on the first turn of every phase. When false, "
            "that turn gets a reminder carrying the new phase's MUST DO instead (the prompt "
            "in force keeps the old phase's until the next full injection)."
        ),
    )
    later_full: LaterFull = Field(
        LaterFull.UPDATE,
        strict=False,
        description=(
            "How a full injection after the first reaches the persona: `update` (the parts of "
            "the prompt that changed, added to the message its turn answers and kept in the "
            "history, so the prompt keeps its prefix and a prompt cache holds) or "
            "`system_prompt` (the whole prompt replaces the system prompt, and a model reads "
            "all of it again)."
        ),
    )


class ResistanceLevel(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return ("low", "medium", "high").index(self.value)


class RedirectSpec(Section):
    trigger: str = Field(min_length=1, description="The situation in which to redirect.")
    replacement: str = Field(min_length=1, description="What to say or do instead of giving in.")


class AntiCapitulationSpec(Section):
    resistance_level: ResistanceLevel = Field(
        ResistanceLevel.MEDIUM,
        strict=False,
        description="Above `low`, the redirects and forbidden phrases enter the MUST DO block.",
    )
    redirects: list[RedirectSpec] = Field(
        default_factory=list, description="Concrete alternatives to capitulating."
    )
    forbidden_phrases: list[str] = Field(
        default_factory=list, description="Phrases of capitulation the persona must never use."
    )


class ResponseLengthSpec(Section):
    default: str = Field("40-100 words", min_length=1, description="Length guidance for a reply.")
    by_phase: dict[str, str] = Field(
        default_factory=dict, description="Phase name -> length guidance, overriding the default."
    )


class EmbeddingBackend(StrEnum):
    EMBEDDING = "embedding"
    TFIDF = "tfidf"


class TfidfThresholds(Section):
    """TF-IDF similarities run far lower than embedding ones for the same texts."""

    similarity_threshold: float = Field(
        0.20, gt=0.0, le=1.0, description="Loop threshold when the TF-IDF backend is in use."
    )
    convergence_threshold: float = Field(
        0.25, gt=0.0, le=1.0, description="Convergence threshold with TF-IDF."
    )


class StagnationDetectionSpec(Section):
    enabled: bool = Field(True, description="Run the monitor.")
    window: int = Field(6, ge=2, description="Number of recent persona messages compared.")
    similarity_threshold: float = Field(
        0.70,
        gt=0.0,
        le=1.0,
        description="Mean pairwise similarity of the persona's window that counts as a loop "
        "(embedding backend; see docs/signals.md for how it was chosen).",
    )
    convergence_threshold: float = Field(
        0.75,
        gt=0.0,
        le=1.0,
        description="Mean similarity of persona messages to the replies they answer that "
        "counts as echoing the interlocutor (embedding backend).",
    )
    tfidf: TfidfThresholds = Field(
        default_factory=TfidfThresholds,
        description="Thresholds used instead when the backend is (or falls back to) TF-IDF.",
    )
    min_turn: int = Field(10, ge=0, description="No checks before this turn.")
    cooldown: int = Field(
        4, ge=0, description="Turns after a trigger during which the monitor stays quiet."
    )
    backend: EmbeddingBackend = Field(
        EmbeddingBackend.EMBEDDING,
        strict=False,
        description="Similarity backend: `embedding` or `tfidf`.",
    )
    intervention_template: str = Field(
        DEFAULT_INTERVENTION,
        description=(
            "Emergency injection; the reminder's fields and `{next_unused_revelation}` are "
            "filled in."
        ),
    )


class StructuralPattern(StrEnum):
    ENDS_WITH_QUESTION = "ends_with_question_to_interlocutor"
    GRATITUDE_LOOP = "gratitude_loop"


def _banned_pattern_schema_accepts_strings(schema: dict[str, Any]) -> None:
    # A bare string is the common form; the JSON Schema must accept it as the model does.
    as_object = dict(schema)
    schema.clear()
    schema["anyOf"] = [{"type": "string", "minLength": 1}, as_object]


class BannedPattern(Section):
    """A phrase the persona must not produce: a case-insensitive substring or a regex."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, json_schema_extra=_banned_pattern_schema_accepts_strings
    )

    substring: str | None = Field(None, min_length=1, description="Matched case-insensitively.")
    regex: str | None = Field(None, min_length=1, description="A Python regular expression.")

    @model_validator(mode="before")
    @classmethod
    def _bare_string_is_substring(cls, value: Any) -> Any:
        return {"substring": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _exactly_one(self) -> BannedPattern:
        if (self.substring is None) == (self.regex is None):
            raise ValueError("give exactly one of `substring` or `regex`")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as err:
                raise ValueError(f"invalid regex {self.regex!r}: {err}") from None
        return self


class RepetitionDetectionSpec(Section):
    enabled: bool = Field(True, description="Run the guard.")
    banned_patterns: list[BannedPattern] = Field(
        default_factory=list,
        description="Plain strings are case-insensitive substrings; `{regex: ...}` for a regex.",
    )
    structural_patterns: list[Annotated[StructuralPattern, Strict(False)]] = Field(
        default_factory=list, description="Turn-level formulae to catch."
    )
    structural_window: int = Field(
        3, ge=2, description="Consecutive persona turns a structural pattern must span to fire."
    )
    max_retries: int = Field(
        2, ge=0, le=10, description="Re-prompts before a candidate is accepted."
    )


class InteractionSpec(Section):
    injection: InjectionSpec = Field(
        default_factory=InjectionSpec, description="When the scaffolding is (re-)sent."
    )
    anti_capitulation: AntiCapitulationSpec = Field(
        default_factory=AntiCapitulationSpec,
        description="What keeps the persona from being absorbed by a helpful interlocutor.",
    )
    response_length: ResponseLengthSpec = Field(
        default_factory=ResponseLengthSpec, description="Length guidance per reply."
    )
    judge_window: int = Field(6, ge=1, description="The judge sees the last N turns, not all.")
    judge_window_step: int | None = Field(
        None,
        ge=1,
        description="The judge's window moves N turns at a time (default 1: every turn's "
        "window is the last judge_window turns; at most the window). A larger step keeps the "
        "windows of consecutive turns starting alike, so a judge that keeps its prompt prefix "
        "reads each turn once, at the price of windows of judge_window - N + 1 to "
        "judge_window turns.",
    )
    stagnation_detection: StagnationDetectionSpec = Field(
        default_factory=StagnationDetectionSpec,
        description="Runtime monitor for agreement loops and convergence.",
    )
    revelation_judge: bool = Field(
        False,
        description="Ask the run's judge to confirm each revelation the monitor finds by "
        "meaning (one judge call per revelation made). Off by default: the embedded model's "
        "confirmation loses most true revelations (see docs/signals.md).",
    )
    repetition_detection: RepetitionDetectionSpec = Field(
        default_factory=RepetitionDetectionSpec,
        description="Runtime guard against banned and formulaic persona output.",
    )
    monitors: MonitorsSpec = Field(
        default_factory=MonitorsSpec,
        description="Further monitors of the persona's drafts, registered by loom-sim or a "
        "package, by name: each section holds that monitor's settings (absent: its defaults).",
    )
