"""The one redactor: no credential a user typed reaches a file, a terminal or a message.

A user gives secrets to loom-sim in URLs — ``http://user:password@host/v1``, a server that takes
``?api_key=…`` — inside a ``--base-url``, a harness ``--target http:…`` spec, a matrix
target, a resumed command line. Those strings travel: into records and reports, into a trace's
``Failure``, into an exception's message that a progress line or the command line shows. So
every string that may hold a URL passes through here on its way out, and this module is the
only place that knows what a secret looks like:

* :func:`redact_url` — a URL as a record keeps it: no ``user:password@``, no query at all (a
  query is where servers take keys; a record never needs one);
* :func:`redact` — any text (an error message, a command-line argument, a target spec): every
  URL in it as :func:`redact_url` leaves it, and any ``key=value`` pair whose key names a
  secret (``api_key``, ``key``, ``token``, ``password``…) with its value removed, URL or not.

It is the bottom of the import graph (it imports nothing of loom-sim), so the exceptions
module and every layer above can use it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["REDACTED", "redact", "redact_argv", "redact_data", "redact_url"]

#: What stands where a secret was.
REDACTED = "<redacted>"

# A URL ends before a space, a quote, a bracket, or punctuation that ends the sentence it is in.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()]*[^\s'\"<>().,;:!?]")
# A credential outside a URL the pattern above recognises (``host:9/v1?api_key=…`` with no
# scheme, ``token=…`` in a server's error text): the key names what it is.
_SECRET_PAIR = re.compile(
    r"(?i)(?P<key>\b(?:api[_-]?key|apikey|key|token|access[_-]?token|auth|secret|password|"
    r"passwd|pwd|sig|signature|client[_-]?secret)=)(?P<value>[^\s&'\"<>,;)]+)"
)
# ``user:password@host`` where the URL has no scheme (``u:pw@127.0.0.1:9/v1``).
_USERINFO = re.compile(r"(?<![\w/])[^\s/@:'\"<>]+:[^\s/@'\"<>]+@(?=[A-Za-z0-9\[])")


def redact_url(url: str | None) -> str | None:
    """Drop credentials and query strings from a URL before it is written anywhere."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable url>"
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    if port:
        host += f":{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def redact(text: str) -> str:
    """``text`` with every URL redacted (:func:`redact_url`) and every secret ``key=value``
    pair's value removed, wherever they stand in it."""
    if not text or ("://" not in text and "=" not in text and "@" not in text):
        return text  # the common case, an ordinary sentence, costs one scan
    text = _URL.sub(lambda m: redact_url(m.group(0)) or "", text)
    text = _SECRET_PAIR.sub(lambda m: m.group("key") + REDACTED, text)
    return _USERINFO.sub("", text)


def redact_argv(argv: list[str] | None) -> list[str]:
    """The command line with every URL and secret in it redacted, wherever it stands in an
    argument (``--base-url=http://user:pw@host/v1``, ``http:http://…`` target specs alike)."""
    return [redact(a) for a in (argv or [])]


def redact_data(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with every string in it redacted:
    settings that carry URLs (a target's, a provider's) on their way into a record."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(item) for item in value]
    return value
