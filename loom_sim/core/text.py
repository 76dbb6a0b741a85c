"""Text from programs and data files, made safe to show: no C1 controls, no bidi overrides.

A terminal reads bytes 0x80-0x9f as C1 controls: ``\\x9d…\\x9c`` is an OSC string (OSC 52
writes the reader's clipboard), ``\\x9b`` starts a CSI sequence. Bidirectional overrides and
isolates (U+202A-U+202E, U+2066-U+2069) make a line display in another order than it is
read by a model or a program (the "trojan source" trick). A target program, a persona's reply
or a pack's text may hold any of them, so what reaches a transcript, or a reader's terminal
through ``view`` and ``trace``, goes through :func:`printable` first.
"""

from __future__ import annotations

import re

# C1 strings first (DCS, SOS, OSC, PM, APC up to their terminator: ST, BEL, or the 7-bit
# ST), so a string's payload goes with its introducer; then every remaining C1 control and
# every bidi embedding, override and isolate. A string never ending is cut at the end of its
# line, so a stray introducer costs a line at most, never the rest of a transcript.
_C1_STRINGS = re.compile(r"[\x90\x98\x9d\x9e\x9f][^\x9c\x07\x1b\n]*(?:\x9c|\x07|\x1b\\)?")
_C1_CSI = re.compile(r"\x9b[0-?]*[ -/]*[@-~]?")
_UNSAFE = re.compile("[\x80-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` without C1 control strings and characters and without bidi controls."""
    if not _UNSAFE.search(text):
        return text
    text = _C1_STRINGS.sub("", text)
    text = _C1_CSI.sub("", text)
    return _UNSAFE.sub("", text)


def json_printable(line: str) -> str:
    """A JSON text with those characters written as ``\\uXXXX`` escapes: the same data to
    a program reading it, nothing a terminal acts on when it is printed."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)
