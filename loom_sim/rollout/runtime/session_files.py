"""One rollout session's files: what was done is read back, each completed turn appended as it
ends, the transcript written last.

No file is created or opened on the event loop. Creating a file can cost a millisecond of
kernel time (a busy ext4 passes over recently freed inodes), which hundreds of rollouts
starting together would pay before any of them sent its first request; so the turn log and
the trace are opened in the writer threads (``loom_sim.store.writer_threads``) while the first
turn's model calls are out, and the transcript is written there too. Appending a turn to an
open file takes microseconds, and stays on the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from loom_sim.errors import LoomError
from loom_sim.store.artifacts import encode_json
from loom_sim.store.records import Transcript, TurnRecord
from loom_sim.store.trace import TraceRecorder
from loom_sim.store.writer_threads import in_writer_thread

if TYPE_CHECKING:
    from loom_sim.store.artifacts import RolloutFiles


class SessionFiles:
    """The turn log and trace of one session of a rollout (a resumed run is a new session)."""

    def __init__(self, files: RolloutFiles):
        self._files = files
        self._log = files.turns
        self.trace = TraceRecorder(files.trace)
        self._open = trio.Event()

    def load(self) -> list[TurnRecord]:
        """The turns completed by earlier sessions (a torn last line is repaired on open)."""
        return self._log.load()

    async def open(self) -> None:
        """Create (or open) the turn log and the trace, in a writer thread."""
        await in_writer_thread(self._open_now)
        self._open.set()

    def _open_now(self) -> None:
        self._log.open()
        self.trace.open()

    async def append(self, record: TurnRecord) -> None:
        """A completed turn, on disk before the next begins (with the trace up to it)."""
        if not self._open.is_set():  # opened while the first turn's calls were out
            await self._open.wait()
        self._log.append(record)
        self.trace.flush()

    def close(self) -> str | None:
        """Close both files; why the trace could not be written, if it could not (never
        raises: the rollout's own outcome comes first)."""
        closed = None
        try:
            self.trace.close()
        except LoomError as err:
            closed = str(err)
        self._log.close()
        return closed

    async def write_transcript(self, transcript: Transcript) -> None:
        """``transcript.json``, written whatever is cancelled once begun. Encoded here (20 µs)
        and written in a writer thread: encoded there, the bytes grew that thread's own heap
        (peak RSS at 256 rollouts 290 -> 350-380 MiB). Raises :class:`LoomError` for a full
        or read-only disk."""
        encoded = encode_json(transcript)
        with trio.CancelScope(shield=True):
            await in_writer_thread(self._files.write_transcript, transcript, encoded)
