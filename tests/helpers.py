"""Small helpers for building config variants in tests."""

from __future__ import annotations

import copy
from typing import Any

_DELETE = object()
DELETE = _DELETE
"""Pass as ``value`` to :func:`edit` to remove the key (or list item) at ``path``."""


def edit(data: Any, path: tuple[str | int, ...], value: Any) -> Any:
    """Return a deep copy of ``data`` with the value at ``path`` set to ``value``.

    ``path`` walks dicts by key and lists by index; the last key is created if missing.
    ``value=DELETE`` removes it instead.
    """
    if not path:
        raise ValueError("path must not be empty")
    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    last = path[-1]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = copy.deepcopy(value)
    return out


def get(data: Any, path: tuple[str | int, ...]) -> Any:
    node = data
    for part in path:
        node = node[part]
    return node
