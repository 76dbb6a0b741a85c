"""What a terminal program writes, made readable: decoding, control sequences, recordings.

A program in a pseudo-terminal writes bytes, not text: colours and cursor moves as escape
sequences, progress bars redrawn with carriage returns, and sometimes bytes that are not UTF-8
at all. The transcript wants the text a person would read; the recording wants every byte, in
time, so the session can be replayed (``asciinema play session.cast``).
"""

from __future__ import annotations

import codecs
import json
import re
import time
from pathlib import Path
from typing import TextIO

from loom_sim.core.text import printable

# CSI (colours, cursor moves), OSC (window titles, hyperlinks), DCS/SOS/PM/APC strings,
# character-set selections and the other two-byte escapes.
_ESCAPES = re.compile(
    r"""
      \x1b\[[0-?]*[ -/]*[@-~]
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?
    | \x1b[ -/]+[0-~]
    | \x1b[0-~]
    | \x9b[0-?]*[ -/]*[@-~]
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _overlay(line: str) -> str:
    """A line as it ends up on screen: backspaces erase, carriage returns write over."""
    out: list[str] = []
    col = 0
    for ch in line:
        if ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        else:
            if col < len(out):
                out[col] = ch
            else:
                out.append(ch)
            col += 1
    return "".join(out)


def clean(text: str) -> str:
    """``text`` without escape sequences or control characters (C1 and bidi controls
    included), lines as a reader sees them (``Loading 10%\\rLoading 20%`` is ``Loading 20%``)."""
    text = _ESCAPES.sub("", printable(text)).replace("\r\n", "\n")
    lines = [
        _overlay(line) if ("\r" in line or "\b" in line) else line for line in text.split("\n")
    ]
    return _CONTROLS.sub("", "\n".join(lines))


class Decoder:
    """Bytes to text as they arrive: a character split across two reads is joined, bytes
    that are not UTF-8 become U+FFFD instead of an exception."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)


class CastRecorder:
    """An asciicast v2 file: a header line, then ``[seconds, "o" | "i", text]`` per chunk.

    Output is recorded up to ``max_bytes`` (a program flooding its terminal must not fill the
    disk); past that one note says so and the rest is left out. Each line is flushed as it is
    written, so a killed session leaves a recording that plays up to that moment.
    """

    def __init__(self, path: Path, width: int, height: int, title: str, max_bytes: int = 8_000_000):
        self.path = path
        self.max_bytes = max_bytes
        self.written = 0
        self.truncated = False
        self._start = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = path.open("w", encoding="utf-8")
        header = {
            "version": 2,
            "width": width,
            "height": height,
            "timestamp": int(time.time()),
            "title": title,
            "env": {"TERM": "xterm-256color"},
        }
        self._write(json.dumps(header))

    def _write(self, line: str) -> None:
        if self._file is not None:
            self._file.write(line + "\n")
            self._file.flush()
            self.written += len(line) + 1

    def _event(self, kind: str, text: str) -> None:
        stamp = round(time.monotonic() - self._start, 6)
        self._write(json.dumps([stamp, kind, text], ensure_ascii=False))

    def output(self, text: str) -> None:
        if self.truncated or not text:
            return
        if self.written + len(text) > self.max_bytes:
            self.truncated = True
            self._event("o", "\r\n[loom-sim: the recording stops here: output over the limit]\r\n")
            return
        self._event("o", text)

    def input(self, text: str) -> None:
        self._event("i", text)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
