"""The probe config: Turn-1 prompts, Turn-2 strategy templates, generation settings.

A probe config is a YAML file of its own (``configs/probes/*.yaml``), validated by these
pydantic models and loaded with :func:`loom_sim.config.load_document`, so every problem is
reported as ``file:line:col`` in one run. Every model rejects unknown keys: a misspelled key
must fail loudly, not silently fall back to a default. Templates are compiled and test-rendered
while loading (:func:`loom_sim.probe.followups.check_template`), so a typo in a variable name
is a config error and not a hundred broken Turn-2 messages.

Models — target and judge — are not part of the config: the same prompt set is meant to be run
against many targets, so they are chosen on the command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from loom_sim.config import load_document
from loom_sim.config.loader import field_errors
from loom_sim.probe.followups import check_template, render_followup
from loom_sim.strategies.policies import STRATEGIES

Strategy = Literal["escalate", "accuse", "exploit_nuance", "default"]
assert get_args(Strategy) == STRATEGIES, "Strategy must list the policies' STRATEGIES"

Template = Annotated[str, Field(min_length=1), AfterValidator(check_template)]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, strict=True)


class ProbePrompt(_Section):
    """One Turn-1 prompt."""

    id: Name = Field(description="Unique id, used in logs and the summary.")
    category: Name = Field(
        description="The kind of prompt, e.g. moral_dilemma or factual_pressure; selects "
        "category_followups and groups the summary."
    )
    text: str = Field(min_length=1, description="The Turn-1 message, sent as it is.")
    counterclaim: str | None = Field(
        None,
        min_length=1,
        description="The position Turn 2 pushes toward (for factual prompts: the false claim); "
        "templates see it as `counterclaim`.",
    )


class GenerationSettings(_Section):
    """How the target is sampled, in both turns."""

    max_tokens: int = Field(300, ge=1, le=32_768, description="Longest answer per turn.")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature.")


class JudgeSettings(_Section):
    """How the contradiction judge is called."""

    max_tokens: int = Field(200, ge=16, le=8_192, description="Longest judge answer.")
    max_attempts: int = Field(
        3, ge=1, le=10, description="Unusable judge answers retried before the run is unjudged."
    )


class ProbeConfig(_Section):
    """A probe: N two-turn conversations looking for self-contradictions."""

    description: str = Field("", description="What this probe set is for.")
    runs: int = Field(10, ge=1, le=100_000, description="Default --runs per mode.")
    target_system_prompt: str | None = Field(
        None, description="System prompt of the target (--target-system overrides it)."
    )
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    static_strategy: Strategy = Field(
        "default", description="The one strategy the static baseline always sends."
    )
    followups: dict[Strategy, Template] = Field(
        description="Turn-2 template per strategy (all four): escalate, accuse, exploit_nuance, "
        "default."
    )
    category_followups: dict[Name, dict[Strategy, Template]] = Field(
        default_factory=dict,
        description="Per prompt category, templates that replace some of `followups`.",
    )
    prompts: list[ProbePrompt] = Field(min_length=1, description="The Turn-1 prompts.")

    @model_validator(mode="after")
    def _consistent(self) -> ProbeConfig:
        """Rules across fields, each reported at the field at fault (all of them at once)."""
        issues: list[tuple[tuple[str | int, ...], str]] = []
        missing = [s for s in STRATEGIES if s not in self.followups]
        if missing:
            issues.append(
                (
                    ("followups",),
                    f"needs a template for every strategy; missing: {', '.join(missing)}",
                )
            )
        first: dict[str, int] = {}
        for index, prompt in enumerate(self.prompts):
            if prompt.id in first:
                issues.append(
                    (
                        ("prompts", index, "id"),
                        f"{prompt.id!r} is already the id of "
                        f"prompts[{first[prompt.id]}]; ids must be unique",
                    )
                )
            first.setdefault(prompt.id, index)
        for index, prompt in enumerate(self.prompts):
            if prompt.counterclaim is None and not missing:
                for strategy in STRATEGIES:
                    try:
                        render_followup(
                            self.template(prompt, strategy),
                            prompt=prompt.text,
                            prompt_id=prompt.id,
                            prompt_category=prompt.category,
                            answer="No.",
                            category="confident",
                            counterclaim=None,
                        )
                    except ValueError as err:
                        issues.append((("prompts", index), f"{strategy} template: {err}"))
                        break
        used = sorted({p.category for p in self.prompts})
        for category in self.category_followups:
            if category not in used:
                issues.append(
                    (
                        ("category_followups", category),
                        f"no prompt has the category "
                        f"{category!r} (prompt categories: {', '.join(used)})",
                    )
                )
        if issues:
            raise field_errors(type(self).__name__, issues)
        return self

    def template(self, prompt: ProbePrompt, strategy: str) -> str:
        """The Turn-2 template for ``strategy`` after ``prompt``: its category's, else the
        shared one."""
        override = self.category_followups.get(prompt.category, {})
        return override.get(strategy) or self.followups[strategy]  # type: ignore[call-overload,index]

    def prompt_for_run(self, run_id: int) -> ProbePrompt:
        """Run ``run_id`` asks prompt ``run_id mod len(prompts)``: every prompt equally often,
        and the same prompt for the same run in every mode."""
        return self.prompts[run_id % len(self.prompts)]


def load_probe_config(path: str | Path) -> ProbeConfig:
    """Load and validate a probe config; :class:`~loom_sim.config.ConfigError` lists every
    problem as ``file:line:col``."""
    return load_document(path, ProbeConfig, "a probe config")
