"""A suite file: a matrix run (configs × targets × rollouts) written down once.

``loom-sim run SUITE.yaml`` runs what ``loom-sim run CONFIG… --target A --target B
--rollouts k`` would, so a comparison can be repeated from a file under version control::

    suite: mania-vs-depression        # names the run directory
    configs:                          # paths (relative to this file) or shipped names
      - mania_patient
      - depressed_patient
    targets: [openai/gpt-4.1, anthropic/claude-sonnet-4]
    rollouts: 5
    turns: 20
    seed: 7
    models: {persona: openai/gpt-4.1-mini, judge: openai/gpt-4.1}

Flags given on the command line win over the file. A file is a suite when its top level has
``configs:`` (a persona config never has), so the same argument takes either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from loom_sim.config.loader import load_document

__all__ = ["SuiteSpec", "is_suite", "load_suite"]

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)]


class SuiteSpec(BaseModel):
    """A matrix of configs × targets, and the run settings every cell shares."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    suite: Name | None = Field(None, description="The run directory's name (default: matrix).")
    configs: list[str] = Field(
        min_length=1,
        description="Persona configs: paths relative to the suite file, or shipped names.",
    )
    targets: list[str] = Field(
        default_factory=list,
        description="Models under evaluation, as provider/name specs (default: each "
        "config's interlocutor).",
    )
    rollouts: int = Field(1, ge=1, le=100_000, description="Rollouts per (config, target).")
    turns: int | None = Field(
        None, ge=1, le=100_000, description="Turns per rollout (default: expected)."
    )
    seed: int | None = Field(None, description="Fixes every random choice.")
    models: dict[str, str] = Field(
        default_factory=dict,
        description="The model of any other role (persona, judge, adversary...).",
    )
    target_system: str | None = Field(
        None, description="The system prompt of the model under evaluation."
    )
    concurrency: int | None = Field(None, ge=1, description="Cells running at once.")
    max_cost: float | None = Field(None, ge=0, description="USD budget for the whole matrix.")
    max_runtime: float | None = Field(None, ge=0, description="Seconds for the whole matrix.")


def is_suite(path: Path) -> bool:
    """Whether ``path`` is a suite file: YAML whose top level has ``configs:``. Cheap and
    forgiving: a file that does not parse is not a suite (the config loader reports it)."""
    if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return any(line.startswith("configs:") for line in text.splitlines())


def load_suite(path: Path) -> SuiteSpec:
    """The suite in ``path``; every problem located as ``file:line:col``."""
    return load_document(path, SuiteSpec, "a suite file")
