"""The judge's prompt templates (``templates/*.j2``) and the one place they are rendered.

``RUBRIC_VERSION`` is recorded with every score: bump it whenever a template's wording
changes, so scores made under different rubrics are never pooled by mistake.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

RUBRIC_VERSION = "1.4"  # 1.4: transcript first, then rubric and schema (a shared prefix)


@cache
def _environment() -> jinja2.Environment:
    import jinja2  # on first render: registering a scorer (validating a config) renders nothing

    return jinja2.Environment(
        loader=jinja2.PackageLoader("loom_sim.judging", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(template: str, /, **context: Any) -> str:
    return _environment().get_template(f"{template}.j2").render(**context).strip()
