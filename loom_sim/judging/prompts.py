"""The judge's prompt templates (``templates/*.j2``) and the one place they are rendered.

``RUBRIC_VERSION`` is recorded with every score: bump it whenever a template's wording
changes, so scores made under different rubrics are never pooled by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# 1.4: transcript first, then rubric and schema (a shared prefix)
# 1.5: each rubric's brief (its criteria, the persona as specified) before the transcript and
#      only the turn's question after it; the judge window moves in steps; no schema in the
#      prompt of a model held to it by a grammar
# 1.6: fidelity asked in the turn's joint call (its MUST DO after the transcript); an
#      in-process judge's JSON written by the schema, its values filled in by the model
RUBRIC_VERSION = "1.6"


@dataclass(frozen=True)
class Rubric:
    """A judge's question in two parts, laid out around the fenced transcript.

    ``brief`` — what is judged and by which criteria; the same for every turn of a rollout —
    goes before the transcript, ``question`` — this turn's specifics — after it. A judge that
    keeps the evaluated prefix of its previous prompt (llama.cpp, a provider's prompt cache)
    then reads the brief once per rollout and, as the transcript grows, only the new turns."""

    brief: str
    question: str


@cache
def _environment() -> jinja2.Environment:
    import jinja2  # on first render: registering a scorer (validating a config) renders nothing

    return jinja2.Environment(
        loader=jinja2.PackageLoader("loom_sim.judging", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        # package data, unchanged while a run lasts: not stat()ed twice per render
        auto_reload=False,
    )


def render(template: str, /, **context: Any) -> str:
    return _environment().get_template(f"{template}.j2").render(**context).strip()


def templates_digest(*names: str) -> str:
    """A hash of the named templates' sources (in order): what a rubric's version is pinned to
    by a test, so a changed wording without a new version fails."""
    import hashlib
    from importlib import resources

    digest = hashlib.sha256()
    folder = resources.files("loom_sim.judging") / "templates"
    for name in names:
        digest.update((folder / f"{name}.j2").read_bytes())
    return digest.hexdigest()[:16]
