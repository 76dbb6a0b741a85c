"""Append-only JSON-lines files of typed records: written one line per record, flushed at
once, and read back with a torn last line (the process died mid-write) cut off.

Flushed, not fsynced: a killed process loses nothing the OS has been given; only a power cut
could, and an fsync per record would cost more than the record's own bookkeeping. A line that
does not decode anywhere but at the end is not ours to continue, and says where it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from loom_sim.errors import LoomError

T = TypeVar("T")

_ENCODER = msgspec.json.Encoder()


class JsonLines(Generic[T]):
    """``path`` as a log of ``kind`` records (a msgspec Struct, or a union of tagged ones)."""

    def __init__(self, path: Path, kind: Any, what: str = "record"):
        # ``kind`` is a Struct type or a union of tagged ones (which is not a ``type[T]``)
        self.path = path
        self._decoder = msgspec.json.Decoder(kind)
        self._what = what
        self._file: BinaryIO | None = None

    def append(self, record: T) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab")
        self._file.write(_ENCODER.encode(record) + b"\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def load(self) -> list[T]:
        """Every complete record; a torn last line is cut off the file, so appending resumes
        on a clean line."""
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        records: list[T] = []
        good = 0
        lines = raw.splitlines(keepends=True)
        for number, line in enumerate(lines, start=1):
            last = number == len(lines)
            if not line.endswith(b"\n"):
                break  # only the last line can lack its newline: it was being written
            try:
                records.append(self._decoder.decode(line))
            except msgspec.DecodeError as err:
                if last:
                    break
                raise LoomError(f"{self.path}:{number}: not a {self._what} ({err})") from None
            good += len(line)
        if good != len(raw):
            with self.path.open("r+b") as fh:
                fh.truncate(good)
        return records
