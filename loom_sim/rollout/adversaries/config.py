"""Adversary configs (``configs/adversaries/*.yaml``): the tactics, their wording, the policy.

Why a file of its own and not a section of the persona config: the same trap is run against
many personas, and its wording is what a researcher tunes between studies. So the tactics'
instructions and templates live here, versioned, and a run records the whole file it used in
``run.json`` (a resumed run never re-reads it).

Each tactic has two texts, both Jinja templates over the move's material:

- ``instruction`` tells the adversary model what to write this turn (``compose: model``);
- ``template`` is the message itself, sent as it is with ``compose: template`` and used as the
  fallback when the model's reply is unusable, so a weak model never costs a turn.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import Field, StrictFloat, field_validator, model_validator

from loom_sim.config.loader import field_errors, load_document
from loom_sim.config.spec import Section
from loom_sim.strategies.classifier import CATEGORIES

CONTRADICTION_TACTICS = (
    "misquote",
    "backstory_recall",
    "alternative_history",
    "emotional_inconsistency",
)
HELPFULNESS_TACTICS = ("above_ceiling", "out_of_bounds_task", "flattery", "register_shift")
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)


class AdversaryKind(StrEnum):
    CONTRADICTION = "contradiction"
    HELPFULNESS = "helpfulness"


class TacticSpec(Section):
    description: str = Field("", description="What the tactic probes, for readers of the config.")
    instruction: str = Field(
        description="Jinja template: what the adversary model is told to write this turn."
    )
    template: str = Field(
        description="Jinja template: the message itself (compose: template, and the fallback)."
    )
    weight: float = Field(
        1.0, ge=0.0, description="Relative weight when tactics are drawn at random."
    )

    @field_validator("instruction", "template")
    @classmethod
    def _parses(cls, text: str) -> str:
        try:
            _ENV.parse(text)
        except jinja2.TemplateSyntaxError as err:
            problem = f"line {err.lineno}: {err.message}"
            raise ValueError(f"not a valid Jinja template ({problem})") from None
        return text


class AdversaryConfig(Section):
    kind: AdversaryKind = Field(
        strict=False, description="contradiction (the trap) or helpfulness (the coaxer)."
    )
    version: str = Field(description="The wording's version; recorded with every run.")
    description: str = Field("", description="What this adversary is for.")
    system_prompt: str = Field(
        description="Jinja template: the adversary model's role; sees `persona_name`."
    )
    compose: Literal["model", "template"] = Field(
        "model", description="Who words each message: the adversary model, or the template."
    )
    policy: Literal["static", "adaptive", "bandit", "weighted"] = Field(
        description=(
            "How the tactic is chosen: static (the fixed `order`, whatever the persona says), "
            "adaptive (the persona's last message, as the probe classifier reads it -> "
            "`mapping`), bandit (Thompson sampling per category, learning from the judged "
            "outcomes; the trap only) or weighted (a seeded draw by tactic weight)."
        )
    )
    order: list[str] = Field(
        default_factory=list,
        description="static: the tactics in turn order (default: as listed).",
    )
    mapping: dict[str, str] = Field(
        default_factory=dict,
        description="adaptive: the classifier's category -> tactic.",
    )
    reasons: dict[str, str] = Field(
        default_factory=dict, description="adaptive: category -> why that tactic, for the log."
    )
    judge_outcomes: bool = Field(
        False,
        description=(
            "Ask the judge, after the persona answers, whether the probe caught it "
            "contradicting itself (always on with the bandit policy, which learns from it)."
        ),
    )
    formality: tuple[StrictFloat, StrictFloat] = Field(
        (0.1, 0.9),
        strict=False,  # written as a YAML list; its items stay strict
        description="helpfulness: formality (0 casual .. 1 academic) at the first and last turn.",
    )
    max_repeats: int = Field(
        2,
        ge=1,
        description=(
            "Most turns in a row one tactic may be used; past that the next tactic in `order` "
            "goes instead (said in the rationale)."
        ),
    )
    max_tokens: int = Field(96, ge=8, le=4096, description="Longest adversary message, in tokens.")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature.")
    history_turns: int = Field(
        6, ge=1, le=200, description="Recent exchanges the adversary model is shown."
    )
    tasks: list[str] = Field(
        default_factory=list, description="helpfulness: out-of-bounds tasks to ask for help with."
    )
    questions: list[str] = Field(
        default_factory=list, description="helpfulness: questions above a knowledge ceiling."
    )
    probe_fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description=(
            "helpfulness: the fields a question or task needs (its text -> fields, e.g. "
            "`medicine`), where its words do not say; only probes outside the persona's "
            "bounds are asked (see docs/adversaries.md)."
        ),
    )
    tactics: dict[str, TacticSpec] = Field(description="The tactics, by name.")

    @model_validator(mode="after")
    def _consistent(self) -> AdversaryConfig:
        """Rules across fields, each reported at the field at fault (all of them at once)."""
        issues: list[tuple[tuple[str | int, ...], str]] = []
        given = self.model_fields_set
        known = (
            CONTRADICTION_TACTICS
            if self.kind is AdversaryKind.CONTRADICTION
            else HELPFULNESS_TACTICS
        )
        for name in self.tactics:
            if name not in known:
                issues.append(
                    (
                        ("tactics", name),
                        f"unknown {self.kind.value} tactic {name!r}; known: {', '.join(known)}",
                    )
                )
        if not self.tactics:
            issues.append((("tactics",), "give at least one tactic"))
        for index, name in enumerate(self.order):
            if name not in self.tactics:
                issues.append((("order", index), f"names {name!r}, which is not among the tactics"))
        if self.policy == "adaptive":
            missing = [c for c in CATEGORIES if c not in self.mapping]
            if missing:
                issues.append(
                    (
                        ("mapping",) if "mapping" in given else ("policy",),
                        f"the adaptive policy needs a mapping for: {', '.join(missing)}",
                    )
                )
        for category, tactic in self.mapping.items():
            if category not in CATEGORIES:
                issues.append(
                    (
                        ("mapping", category),
                        f"unknown category {category!r}; known: {', '.join(CATEGORIES)}",
                    )
                )
            elif tactic not in self.tactics:
                issues.append(
                    (
                        ("mapping", category),
                        f"{category} -> {tactic!r}, which is not among the tactics",
                    )
                )
        if self.kind is AdversaryKind.HELPFULNESS:
            if self.policy == "bandit":
                issues.append(
                    (
                        ("policy",),
                        "the bandit learns from judged contradictions, so only the trap takes "
                        "it; the coaxer takes static, adaptive or weighted",
                    )
                )
            for tactic, field, needs in (
                ("out_of_bounds_task", "tasks", self.tasks),
                ("above_ceiling", "questions", self.questions),
            ):
                if tactic in self.tactics and not needs:
                    issues.append(
                        (
                            (field,) if field in given else ("tactics", tactic),
                            f"the {tactic} tactic needs `{field}`",
                        )
                    )
        if self.policy == "weighted" and not any(t.weight > 0 for t in self.tactics.values()):
            issues.append((("tactics",), "the weighted policy needs a tactic with weight > 0"))
        if issues:
            raise field_errors(type(self).__name__, issues)
        return self

    @property
    def sequence(self) -> list[str]:
        """The tactics in turn order (static), and the fallback order for every policy."""
        return list(self.order or self.tactics)

    @property
    def learns(self) -> bool:
        return self.policy == "bandit"

    @property
    def judged(self) -> bool:
        return self.judge_outcomes or self.learns


def render(template: str, /, **context: object) -> str:
    return _compiled(template).render(**context).strip()


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> jinja2.Template:
    """Compiling a template costs far more than rendering it; a rollout renders the same few."""
    return _ENV.from_string(template)


def load_adversary(path: str | Path, kind: AdversaryKind | None = None) -> AdversaryConfig:
    """An adversary config from ``path``; located errors when it is wrong or the wrong kind."""
    from loom_sim.config.errors import ConfigError, Issue
    from loom_sim.config.yaml_source import parse_yaml, read_text

    config = load_document(path, AdversaryConfig, "an adversary config")
    if kind is not None and config.kind is not kind:
        _, where = parse_yaml(read_text(Path(path)), str(path)).locate(("kind",))
        message = f"is {config.kind.value}, expected {kind.value} here"
        issue = Issue(("kind",), message, *((where.line, where.column) if where else ()))
        raise ConfigError(str(path), [issue])
    return config


def for_run(kind: AdversaryKind, config_path: Path, persona_config: Any) -> AdversaryConfig:
    """The ``kind`` adversary config a run of ``persona_config`` uses: from the folder its
    ``evaluation.adversary.config_dir`` names (relative to the config file), else the shipped
    one."""
    from loom_sim.errors import LoomError
    from loom_sim.resources import shipped_dir

    spec = persona_config.evaluation.adversary
    folder = config_path.parent / spec.config_dir if spec.config_dir else shipped_dir("adversaries")
    path = folder / f"{kind.value}.yaml"
    if not path.is_file():
        where = (
            "evaluation.adversary.config_dir" if spec.config_dir else "loom-sim's shipped folder"
        )
        raise LoomError(
            f"{path}: no {kind.value} adversary config there ({where}); "
            "copy one from loom-sim's configs/adversaries"
        )
    return load_adversary(path, kind)
