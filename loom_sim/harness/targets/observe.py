"""What a target leaves besides its replies: lines in its event file, files in its folder.

Both are read by position, never by trusting the program: the event file from the offset
reached so far (a torn last line waits for the rest of it), the artifacts as the files
matching a glob that were not there before.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any


class EventTail:
    """Follows an append-only JSON-lines file; ``offset`` is kept so a resumed session carries
    on where the last one stopped."""

    def __init__(self, path: Path | None, offset: int = 0):
        self.path = path
        self.offset = offset

    def read(self) -> list[dict[str, Any]]:
        """The complete lines written since the last read (a line that is not a JSON object
        is kept as ``{"unparsed": ...}``: nothing the program wrote is dropped)."""
        if self.path is None or not self.path.is_file():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read()
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        events = []
        for line in chunk[:end].splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                event = {"unparsed": line.decode("utf-8", "replace")}
            events.append(event)
        return events

    def skip(self) -> list[dict[str, Any]]:
        """Everything written since the last read, a torn last line included, read and passed
        over: what a killed session's lost turn left, which no committed turn may claim."""
        events = self.read()
        if self.path is None or not self.path.is_file():
            return events
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            rest = fh.read()
        if rest.strip():
            events.append({"unparsed": rest.decode("utf-8", "replace")})
        self.offset += len(rest)
        return events


class ArtifactWatch:
    """The files matching a glob that appeared since the last look."""

    def __init__(self, pattern: str | None, seen: list[str] | None = None):
        self.pattern = pattern
        self.seen = set(seen or [])

    def new(self) -> list[str]:
        if self.pattern is None:
            return []
        found = sorted(p for p in glob.glob(self.pattern, recursive=True) if Path(p).is_file())
        fresh = [p for p in found if p not in self.seen]
        self.seen.update(fresh)
        return fresh
