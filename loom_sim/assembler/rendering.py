"""The prompt templates, their version, and the one place they are rendered.

Wording lives in ``templates/*.j2``, never in logic code. ``TEMPLATE_VERSION`` is recorded in
every dry-run and run; bump it whenever a template's output changes, so two transcripts made
with different wording are never mistaken for comparable ones. The golden tests fail when the
templates change without a bump (they compare :func:`template_digest`).
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# 1.2: no empty HOLD YOUR POSITION heading when there is nothing to hold
TEMPLATE_VERSION = "1.2"

_BLANK_RUNS = re.compile(r"\n{3,}")


def _oneline(text: Any) -> str:
    # YAML block scalars (`|`) keep their line breaks; inside a bullet they must not.
    return " ".join(str(text).split())


@cache
def environment() -> jinja2.Environment:
    import jinja2  # on first render: reading turn records (validating a config) renders nothing

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("loom_sim.assembler", "templates"),
        undefined=jinja2.StrictUndefined,  # a misspelled variable is a bug, not an empty string
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )
    env.filters["oneline"] = _oneline
    return env


def render(template: str, /, **context: Any) -> str:
    """Render ``templates/<template>.j2``, normalising trailing spaces and blank-line runs."""
    text = environment().get_template(f"{template}.j2").render(**context)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANK_RUNS.sub("\n\n", text).strip()


def template_digest() -> str:
    """A hash of every template's source: changes exactly when the wording can change."""
    digest = hashlib.sha256()
    folder = resources.files("loom_sim.assembler") / "templates"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".j2"):
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
