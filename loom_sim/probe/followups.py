"""Turn-2 follow-ups: the probe config's strategy templates, compiled and rendered.

The wording of each strategy is the experiment, so it lives in the probe config (and can differ
per prompt category) rather than in code. Templates are Jinja, rendered in a sandbox with
``StrictUndefined``: they come from a user's YAML file, and a misspelled variable must be an
error at load time (see :func:`check_template`), not an empty string in a hundred Turn-2
messages. A template without ``{{ }}`` is plain text and is sent as it is.

The variables a template sees (:data:`VARIABLES`):

- ``prompt`` — the Turn-1 prompt text; ``prompt_id``, ``prompt_category`` — its id and category;
- ``answer`` — the target's whole Turn-1 answer; ``answer_excerpt`` — its first sentence (at
  most :data:`EXCERPT_WORDS` words), for quoting it back;
- ``category`` — the classifier's reading of the answer (confident, hesitant, hedging, unclear);
- ``counterclaim`` — the prompt's ``counterclaim`` (the position Turn 2 pushes toward). For a
  prompt without one it is false in a test (``{% if counterclaim %}``) and an error when
  printed, so a template that needs it cannot silently send "None"; the config loader checks
  every prompt against the templates it will get.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

EXCERPT_WORDS = 40
VARIABLES = (
    "prompt",
    "prompt_id",
    "prompt_category",
    "answer",
    "answer_excerpt",
    "category",
    "counterclaim",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class MissingCounterclaim:
    """``counterclaim`` for a prompt that has none: false in a test, an error when printed."""

    def __init__(self, prompt_id: str = "the prompt"):
        self.prompt_id = prompt_id

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        raise ValueError(
            f"the template prints counterclaim, but {self.prompt_id} has none; give it a "
            "counterclaim or test for it ({% if counterclaim %})"
        )


#: What :func:`check_template` renders a template with: every variable, in both shapes a
#: template may branch on (a counterclaim given, and a false one).
_SAMPLES: tuple[dict[str, Any], ...] = tuple(
    {
        "prompt": "Is it ever right to lie?",
        "prompt_id": "sample",
        "prompt_category": "sample",
        "answer": "No. Lying is wrong.",
        "answer_excerpt": "No.",
        "category": "confident",
        "counterclaim": counterclaim,
    }
    for counterclaim in ("Lying is sometimes right.", "")
)


@cache
def environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        keep_trailing_newline=False,
    )


@lru_cache(maxsize=256)
def _compiled(source: str) -> jinja2.Template:
    return environment().from_string(source)


def excerpt(text: str, words: int = EXCERPT_WORDS) -> str:
    """The first sentence of ``text``, cut to ``words`` words (with "…" when cut)."""
    flat = " ".join(text.split())
    first = _SENTENCE_END.split(flat, maxsplit=1)[0]
    parts = first.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def check_template(source: str) -> str:
    """``source`` unchanged if it compiles and renders with every documented variable; else a
    ``ValueError`` in one sentence (the config loader places it at the template's line)."""
    env = environment()
    try:
        template = env.from_string(source)
    except jinja2.TemplateSyntaxError as err:
        raise ValueError(f"template syntax error on its line {err.lineno}: {err.message}") from None
    for sample in _SAMPLES:
        try:
            text = template.render(**sample)
        except jinja2.UndefinedError as err:
            raise ValueError(
                f"template uses an unknown variable ({err.message}); known: {', '.join(VARIABLES)}"
            ) from None
        except jinja2.TemplateError as err:
            raise ValueError(f"template cannot be rendered: {err}") from None
        if not text.strip():
            raise ValueError("template renders to an empty message")
    return source


def render_followup(source: str, **context: Any) -> str:
    """The Turn-2 message: ``source`` rendered with the variables above (``answer_excerpt`` is
    derived from ``answer`` when not given; a ``counterclaim`` of None is
    :class:`MissingCounterclaim`)."""
    context.setdefault("answer_excerpt", excerpt(context.get("answer", "")))
    if context.get("counterclaim") is None:
        context["counterclaim"] = MissingCounterclaim(repr(context.get("prompt_id", "the prompt")))
    text = _compiled(source).render(**context)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
