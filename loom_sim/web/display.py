"""Values as a researcher reads them: numbers rounded, a score's details as labelled values.

A scorer's details are whatever JSON it chose to record (dicts of per-dimension gaps, lists of
question/answer pairs, nested counts). Shown as JSON they are unreadable
(``{"distress": -0.04899999999999999}``); here each becomes a labelled entry, nested where the
value nests, so a template renders a tree of labels and rounded values and never a raw dump.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Entry", "entries", "number", "signed"]

LONG_TEXT = 60  # a string longer than this is a paragraph (a judge's reasoning)


def number(value: Any, digits: int = 3) -> str:
    """A number for reading: ints as they are, floats rounded (``-0.049``, never
    ``-0.04899999999999999``), large ones without decimals, no ``-0.000``."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def signed(value: float | None, digits: int = 2) -> str:
    """A difference: ``+0.05``, ``−0.12`` (a real minus sign), ``0.00``."""
    if value is None:
        return "–"
    text = number(float(value), digits)
    if text.startswith("-"):
        return "−" + text[1:]
    return text if float(text.replace(",", "")) == 0 else "+" + text


@dataclass(frozen=True)
class Entry:
    """One labelled value: ``text`` (short, inline), a paragraph (``long``), or ``children``
    (a nested mapping, or the items of a list)."""

    label: str
    text: str | None = None
    long: bool = False
    children: list[Entry] = field(default_factory=list)
    items: bool = False  # the children are a list's items (numbered), not named fields


def _label(key: Any) -> str:
    return str(key).replace("_", " ")


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _entry(label: str, value: Any) -> Entry:
    if isinstance(value, str):
        return Entry(label, value, long=len(value) > LONG_TEXT)
    if _scalar(value):
        return Entry(label, number(value))
    if isinstance(value, dict):
        if not value:
            return Entry(label, "none")
        return Entry(label, children=[_entry(_label(k), v) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        if not value:
            return Entry(label, "none")
        if all(_scalar(v) and not (isinstance(v, str) and len(v) > LONG_TEXT) for v in value):
            return Entry(label, ", ".join(v if isinstance(v, str) else number(v) for v in value))
        if all(isinstance(v, (list, tuple)) and all(_scalar(x) for x in v) for v in value):
            # pairs and triples (a question and its answer): one line each
            lines = [" — ".join(x if isinstance(x, str) else number(x) for x in v) for v in value]
            return Entry(
                label,
                children=[Entry(str(i), line, long=True) for i, line in enumerate(lines, 1)],
                items=True,
            )
        return Entry(
            label, children=[_entry(str(i), v) for i, v in enumerate(value, 1)], items=True
        )
    return Entry(label, str(value))


def entries(details: dict[str, Any]) -> list[Entry]:
    """A score's details as labelled entries, in the order the scorer wrote them."""
    return [_entry(_label(k), v) for k, v in details.items()]
