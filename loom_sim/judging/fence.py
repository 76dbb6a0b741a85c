"""The fence around untrusted text: what personas, interlocutors and adversaries said reaches a
judge only as data between markers carrying a per-call nonce — through this module and no
other way.

The judge reads text written by models; nothing in it may instruct the judge or pass itself
off as the rubric. So untrusted text is *encoded*, never edited, before it is placed between
the markers, and the encoding is closed by construction:

- ``&`` becomes ``&amp;`` and ``<`` becomes ``&lt;``: encoded text contains no ``<`` at all,
  so it cannot contain a marker (every marker starts with ``<<<``), whatever it was built
  from — no nonce to guess, no deletion to exploit;
- every line after a text's first is indented by four spaces: inside the fence, a line that
  starts at column 0 is always an entry (``[turn 3] PERSONA: ...``, ``quote: ...``) or a
  marker, so text cannot forge an entry either.

Decoding undoes both exactly (:func:`decode` is the inverse of :func:`encode` for every
string), and :func:`unfence` reads a fenced block back into what was fenced: the property
tests in ``tests/test_fence.py`` hold it to that for arbitrary text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from loom_sim.messages import WindowTurn

TRANSCRIPT = "TRANSCRIPT"
MATERIAL = "PROBE MATERIAL"
INDENT = "    "
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENTRY = re.compile(r"^\[turn (-?\d+)\] (PERSONA|INTERLOCUTOR): ")


def markers(nonce: str, block: str = TRANSCRIPT) -> tuple[str, str]:
    """The (begin, end) markers of a fenced ``block`` with this nonce."""
    return f"<<<{block} {nonce}>>>", f"<<<END {block} {nonce}>>>"


def encode(text: str) -> str:
    """``text`` as it may stand inside a fence: no ``<``, continuation lines indented."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;")
    return escaped.replace("\n", "\n" + INDENT)


def decode(text: str) -> str:
    """The inverse of :func:`encode`."""
    joined = text.replace("\n" + INDENT, "\n")
    return joined.replace("&lt;", "<").replace("&amp;", "&")


def fence(window: list[WindowTurn], nonce: str, material: Mapping[str, str] | None = None) -> str:
    """The window (and an adversary's probe material, if any) as fenced data the judge cannot
    mistake for instructions."""
    begin, end = markers(nonce)
    lines = [begin]
    for turn in window:
        lines.append(f"[turn {turn.turn}] PERSONA: {encode(turn.persona)}")
        lines.append(f"[turn {turn.turn}] INTERLOCUTOR: {encode(turn.interlocutor)}")
    lines.append(end)
    if material:
        begin, end = markers(nonce, MATERIAL)
        lines.append(begin)
        for key, value in material.items():
            if not _KEY.match(key):
                raise ValueError(f"material key {key!r} is not an identifier")
            lines.append(f"{key}: {encode(value)}")
        lines.append(end)
    return "\n".join(lines)


def fence_lines(lines: list[str], nonce: str) -> str:
    """Any transcript lines (a group chat's, a crux room's, a corpus's) as fenced data, each
    encoded as :func:`fence` encodes a message."""
    begin, end = markers(nonce)
    return "\n".join([begin, *(encode(line) for line in lines), end])


def unfence(text: str, nonce: str) -> tuple[list[WindowTurn], dict[str, str]]:
    """What :func:`fence` fenced, read back from ``text`` (a judge prompt holding it)."""
    entries = _block(text, nonce, TRANSCRIPT)
    window: list[WindowTurn] = []
    for index in range(0, len(entries), 2):
        persona, interlocutor = _entry(entries[index]), _entry(entries[index + 1])
        if persona[0] != interlocutor[0] or (persona[1], interlocutor[1]) != (
            "PERSONA",
            "INTERLOCUTOR",
        ):
            raise ValueError(f"entries {index} and {index + 1} are not one turn")
        window.append(WindowTurn(persona[0], persona[2], interlocutor[2]))
    material = {}
    if markers(nonce, MATERIAL)[0] in text:
        for entry in _block(text, nonce, MATERIAL):
            key, _, value = entry.partition(": ")
            material[key] = decode(value)
    return window, material


def _block(text: str, nonce: str, block: str) -> list[str]:
    """The entries of one fenced block: each a column-0 line with its indented lines."""
    begin, end = markers(nonce, block)
    start = text.index(begin + "\n") + len(begin) + 1
    stop = text.index("\n" + end, start - 1)
    body = text[start:stop] if stop >= start else ""
    entries: list[str] = []
    for line in body.split("\n") if body else []:
        if line.startswith(INDENT) and entries:
            entries[-1] += "\n" + line
        else:
            entries.append(line)
    return entries


def _entry(entry: str) -> tuple[int, str, str]:
    found = _ENTRY.match(entry)
    if found is None:
        raise ValueError(f"not a transcript entry: {entry[:40]!r}")
    return int(found.group(1)), found.group(2), decode(entry[found.end() :])
