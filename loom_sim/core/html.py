"""The one Jinja environment every HTML page is rendered in: autoescaping, strict.

Everything a page shows (transcripts, a target's output, a debater's words, a run folder's
names) is model or user text, hence untrusted: the environment escapes every value unless a
filter returns ``Markup`` on purpose, and an undefined name is an error, not an empty string.
The report, the debate report, the comparison and the web views differ only in their
templates, filters and globals, so they pass those in and share the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jinja2

__all__ = ["html_environment"]


def html_environment(
    package: str,
    folder: str = "templates",
    *,
    filters: Mapping[str, Callable[..., Any]] | None = None,
    globals: Mapping[str, Any] | None = None,
    keep_trailing_newline: bool = False,
) -> jinja2.Environment:
    """An autoescaping, strict environment over the templates in ``package``'s ``folder``."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=keep_trailing_newline,
    )
    env.filters.update(filters or {})
    env.globals.update(globals or {})
    return env
