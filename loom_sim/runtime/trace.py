"""The trace: every envelope of a rollout, one JSON line each, in ``trace.jsonl``.

Envelopes are buffered and written at turn boundaries (and when a rollout ends), so tracing
costs a few microseconds per message on the event loop; a killed process loses at most the
trace of the turn in progress, which its resumed run repeats anyway.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from loom_sim.messages import Envelope

_ENCODER = msgspec.json.Encoder()


class TraceRecorder:
    def __init__(self, path: Path | None):
        self._path = path
        self._pending: list[bytes] = []
        self.count = 0

    def record(self, envelope: Envelope) -> None:
        self.count += 1
        if self._path is not None:
            self._pending.append(_ENCODER.encode(envelope))

    def flush(self) -> None:
        if self._path is None or not self._pending:
            return
        with self._path.open("ab") as fh:
            fh.write(b"\n".join(self._pending) + b"\n")
        self._pending.clear()
