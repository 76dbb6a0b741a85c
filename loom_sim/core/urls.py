"""URLs as they may be written down: without credentials or query strings.

A base URL can carry a password (``https://user:pw@host``) or a key in its query
(``?api-key=…``). Records, resume commands and logs outlive the session that was given it,
so every system writes URLs through :func:`redact_url` and command lines through
:func:`redact_argv`.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str | None) -> str | None:
    """Drop credentials and query strings from a URL before it is written anywhere."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with every URL in it redacted (``--base-url=URL`` included)."""
    out = []
    for arg in argv:
        shown = arg
        if "://" in arg:
            flag, eq, value = arg.partition("=")
            if eq and flag.startswith("--") and "://" not in flag:
                shown = f"{flag}={redact_url(value)}"
            else:
                shown = redact_url(arg) or arg
        out.append(shown)
    return out
