"""The plan header every record carries, and the redaction that makes it safe to write.

Each system's record (``run.json``, ``probe.json``, ``harness.json``, ``debate.json``,
``report.json``) says when it was made, by which command, with which seed and which versions of
loom-sim, its libraries, its prompt templates and rubrics. The command line and any URL pass
through :func:`~loom_sim.redaction.redact_argv` / :func:`~loom_sim.redaction.redact_url`
(the one redactor, :mod:`loom_sim.redaction`) on the way in, so no system can forget to
remove the ``user:password@`` or the ``?key=`` a user typed: a header holds only what was
redacted when it was made.
"""

from __future__ import annotations

import functools
import platform
import sys
from datetime import UTC, datetime
from importlib import metadata

import msgspec

from loom_sim.redaction import redact_argv, redact_url

__all__ = ["PlanHeader", "plan_header", "redact_argv", "redact_url", "versions"]

_LIBRARIES = ("pydantic", "msgspec", "trio", "httpx", "transitions", "jinja2", "llama-cpp-python")


class PlanHeader(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """Who made a record, how, and with what: the same fields in every system's record."""

    format_version: int
    seed: int | None
    command: list[str]  # the command line, redacted
    created_at: str
    versions: dict[str, str]
    template_version: str | None = None
    rubric_versions: dict[str, str] = msgspec.field(default_factory=dict)


def plan_header(
    *,
    format_version: int,
    seed: int | None,
    argv: list[str] | None,
    template_version: str | None = None,
    rubric_versions: dict[str, str] | None = None,
) -> PlanHeader:
    """A header for a record made now, its command line redacted."""
    return PlanHeader(
        format_version=format_version,
        seed=seed,
        command=redact_argv(argv),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        versions=versions(),
        template_version=template_version,
        rubric_versions=dict(rubric_versions or {}),
    )


def versions() -> dict[str, str]:
    """Python, the platform and the libraries whose behaviour a record depends on."""
    return dict(_versions())  # a copy: the caller may add to it


@functools.cache
def _versions() -> tuple[tuple[str, str], ...]:
    # read once per process: each lookup parses a package's metadata file, and a record and
    # its header both ask
    found = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in _LIBRARIES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return tuple(found.items())
