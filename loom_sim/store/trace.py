"""The trace: every envelope of a rollout, one JSON line each, in ``trace.jsonl``.

Envelopes are buffered and written at turn boundaries (and when a rollout ends), so tracing
costs a few microseconds per message on the event loop; a killed process loses at most the
trace of the turn in progress, which its resumed run repeats anyway.

Envelope ids are unique within a trace file across every session that appended to it: a
resumed run (or a second ``loom-sim score``) numbers on from the last id on disk, which may be
past the last completed turn's when an interrupted session wrote the trace of its turn in
progress.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import BinaryIO

import msgspec

from loom_sim.core.messages import Envelope, decode_envelope
from loom_sim.errors import LoomError
from loom_sim.store.jsonl import DamagedFile, append, last_line, open_for_append, read_records

_ENCODER = msgspec.json.Encoder()


class _Id(msgspec.Struct):
    id: int


_ID = msgspec.json.Decoder(_Id)


class TraceRecorder:
    def __init__(self, path: Path | None):
        self._path = path
        self._file: BinaryIO | None = None  # opened at the first flush, off the start-up path
        self._pending: list[bytes] = []
        self.count = 0

    @property
    def next_id(self) -> int:
        """The first id free in this trace file: one past the last envelope's (1 if none)."""
        if self._path is None:
            return 1
        line = last_line(self._path)
        if line is None:
            return 1
        try:
            return _ID.decode(line).id + 1
        except msgspec.DecodeError:
            return 1  # a torn last line, cut at the first flush

    def record(self, envelope: Envelope) -> None:
        self.count += 1
        if self._path is not None:
            self._pending.append(_ENCODER.encode(envelope))

    def open(self) -> None:
        """Open the trace file now if it is not yet (the first flush would open it
        otherwise): for a caller that creates its files ahead, off its event loop."""
        if self._path is not None and self._file is None:
            self._file = open_for_append(self._path)

    def flush(self) -> None:
        if self._path is None or not self._pending:
            return
        if self._file is None:
            self._file = open_for_append(self._path)
        self._pending.append(b"")
        data = b"\n".join(self._pending)
        self._pending.clear()
        append(self._file, self._path, data)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._file is not None:
                file, self._file = self._file, None
                with contextlib.suppress(OSError):  # a failed flush was reported above
                    file.close()


def read_trace(path: Path) -> list[Envelope]:
    """Every envelope in a trace file (a torn last line from a killed run is ignored); a
    damaged line elsewhere, or a file with no envelope at all, is a plain error naming it."""

    def advice(line: int, after: int) -> str:
        return (
            f"{after} envelope{'s' if after != 1 else ''} follow it; the file was damaged "
            "after it was written (the trace is a record only: nothing else reads it)"
        )

    nothing = LoomError(f"{path}: holds no trace envelope (is it a loom-sim trace.jsonl?)")
    try:
        envelopes, _ = read_records(path, decode_envelope, what="a trace envelope", advice=advice)
    except DamagedFile as err:
        if err.line == 1 and err.after == 0:
            raise nothing from None
        raise
    if not envelopes and path.read_bytes().strip():
        raise nothing
    return envelopes


def summarize(envelope: Envelope, width: int = 90) -> str:
    """One line saying what a message was about, for people reading a trace: each message
    type says it itself (``Body.summary``), so a plug-in's messages read as well as ours."""
    text = " ".join(envelope.body.summary().split())
    return text if len(text) <= width else text[: width - 1] + "…"
