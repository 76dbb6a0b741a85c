"""The prompt templates, their version, and the one place they are rendered.

Wording lives in ``templates/*.j2``, never in logic code. ``TEMPLATE_VERSION`` is recorded in
every dry-run and run; bump it whenever a template's output changes, so two transcripts made
with different wording are never mistaken for comparable ones. The golden tests fail when the
templates change without a bump (they compare :func:`template_digest`).

A :class:`TemplateSet` is that machinery for any folder of templates in a package: the
persona's scaffolding here, and other modes' prompts (the debate's) with versions of their own,
so a change to one mode's wording never forces a version bump on another's transcripts.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# 1.2: no empty HOLD YOUR POSITION heading when there is nothing to hold
# 1.3: a full injection after the first reaches the persona as an update (update.j2)
TEMPLATE_VERSION = "1.3"

_BLANK_RUNS = re.compile(r"\n{3,}")


def _oneline(text: Any) -> str:
    # YAML block scalars (`|`) keep their line breaks; inside a bullet they must not.
    return " ".join(str(text).split())


_LEADING_MARKUP = re.compile(r"^[#>\s]+")


def _flat(text: Any) -> str:
    """A data field (a name, a source URL, a list item) as one inert line of a prompt: line
    breaks of every kind collapsed, and no leading ``#`` or ``>`` to make it a heading or a
    quote where it starts a line. ``"x\\n\\n## Rules\\n- obey"`` stays inside its field."""
    return _LEADING_MARKUP.sub("", _oneline(text))


@dataclass(frozen=True)
class TemplateSet:
    """The versioned jinja2 templates in ``package``'s ``folder``: rendered strictly (a
    misspelled variable is a bug, not an empty string), normalised the same way, and hashed so
    a golden test can tell when the wording changed without a version bump."""

    package: str
    version: str
    folder: str = "templates"
    _env: list[jinja2.Environment] = field(default_factory=list, repr=False, compare=False)

    def environment(self) -> jinja2.Environment:
        if not self._env:  # built once, on first use (a frozen dataclass caches in a list)
            import jinja2  # on first render: reading records (validating a config) renders nothing

            env = jinja2.Environment(
                loader=jinja2.PackageLoader(self.package, self.folder),
                undefined=jinja2.StrictUndefined,
                trim_blocks=True,
                lstrip_blocks=True,
                keep_trailing_newline=False,
                autoescape=False,
                # package data, unchanged while a run lasts: not stat()ed twice per render
                auto_reload=False,
            )
            env.filters["oneline"] = _oneline
            env.filters["flat"] = _flat
            self._env.append(env)
        return self._env[0]

    def render(self, template: str, /, **context: Any) -> str:
        """Render ``<folder>/<template>.j2``, normalising trailing spaces and blank-line runs."""
        text = self.environment().get_template(f"{template}.j2").render(**context)
        text = "\n".join(line.rstrip() for line in text.splitlines())
        return _BLANK_RUNS.sub("\n\n", text).strip()

    def digest(self) -> str:
        """A hash of every template's source: changes exactly when the wording can change."""
        digest = hashlib.sha256()
        folder = resources.files(self.package) / self.folder
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".j2"):
                digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
        return digest.hexdigest()[:16]


#: The persona's scaffolding (must do / how / context / system).
PERSONA_TEMPLATES = TemplateSet("loom_sim.assembler", TEMPLATE_VERSION)


def environment() -> jinja2.Environment:
    return PERSONA_TEMPLATES.environment()


def render(template: str, /, **context: Any) -> str:
    """Render ``templates/<template>.j2``, normalising trailing spaces and blank-line runs."""
    return PERSONA_TEMPLATES.render(template, **context)


def template_digest() -> str:
    """A hash of every template's source: changes exactly when the wording can change."""
    return PERSONA_TEMPLATES.digest()
