"""The fence: only the newest attempt at a cell writes its files.

Ray re-runs a cell when it believes the worker running it is lost. A worker on a node cut off
by the network is not always dead: until it notices, it may go on with its turn while the new
attempt, elsewhere, resumes from the same ``turns.jsonl``. Both appending would duplicate
turns. So an attempt claims its cell by writing its name to ``.attempt`` in the cell's folder
when it starts, and checks the claim before every write (each turn, the transcript); an
attempt that finds another's name stops at once, before writing anything.

The check and the write are not one atomic step, so two attempts could still collide inside
the few microseconds between them; a stale attempt has to be running at all for that, which
takes a network partition that Ray has not yet resolved by killing the old node.
"""

from __future__ import annotations

from pathlib import Path

from loom_sim.store.artifacts import TURNS_FILE, RolloutFiles, TurnLog
from loom_sim.store.records import Transcript, TurnRecord

__all__ = ["FENCE_FILE", "Fence", "FencedFiles", "Superseded"]

FENCE_FILE = ".attempt"


class Superseded(BaseException):
    """A newer attempt at this cell has started; this one must stop without writing.

    A ``BaseException``, like ``KeyboardInterrupt``: no handler of ordinary failures may take
    it for a failed turn or rollout, since recording that failure would overwrite the newer
    attempt's work."""


class Fence:
    def __init__(self, folder: Path, holder: str):
        self.path = folder / FENCE_FILE
        self.holder = holder

    def claim(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(FENCE_FILE + ".tmp")
        tmp.write_text(self.holder)
        tmp.replace(self.path)

    def release(self) -> None:
        """The attempt is over: remove the claim if it is still this attempt's, so a finished
        cell's folder holds what the local executor's would."""
        try:
            if self.path.read_text() == self.holder:
                self.path.unlink()
        except FileNotFoundError:
            pass

    def check(self) -> None:
        try:
            current = self.path.read_text()
        except FileNotFoundError:
            current = None
        if current != self.holder:
            raise Superseded(f"{self.path.parent}: {current} has taken over from {self.holder}")


class _FencedTurnLog(TurnLog):
    def __init__(self, path: Path, fence: Fence):
        super().__init__(path)
        self._fence = fence

    def append(self, record: TurnRecord) -> None:
        self._fence.check()
        super().append(record)


class FencedFiles(RolloutFiles):
    """A cell's files, written only while ``fence`` holds."""

    _fence: Fence

    def __init__(self, folder: Path, fence: Fence):
        super().__init__(folder)
        object.__setattr__(self, "_fence", fence)

    @property
    def turns(self) -> TurnLog:
        return _FencedTurnLog(self.dir / TURNS_FILE, self._fence)

    def write_transcript(self, transcript: Transcript, encoded: bytes | None = None) -> None:
        self._fence.check()
        super().write_transcript(transcript, encoded)
