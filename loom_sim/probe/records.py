"""What a probe leaves on disk: ``<mode>.jsonl``, one :class:`ProbeRecord` per completed run.

A record holds everything needed to read a run back without re-running it — the prompt, the
classifier's category *and the markers that decided it*, the strategy and the policy's
rationale, the judge's verdict or its failure, the whole conversation, usage and timings — so
the summary is a pure function of the logs, and a surprising number in it can be traced to the
runs behind it.

Lines are in run order, so the same seed gives the same file (timings aside), even when runs
complete out of order under ``--concurrency``: :class:`ProbeLog` holds a finished run until
every earlier one is written, then writes and flushes. When a probe stops early the held runs
are written anyway, in order, with the gaps of the runs that never finished.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from loom_sim.errors import LoomError
from loom_sim.models.base import Usage

MODES = ("static", "adaptive", "bandit")


class Message(msgspec.Struct, frozen=True):
    role: str  # system | user (the prober) | assistant (the target)
    content: str


class JudgeOutcome(msgspec.Struct, frozen=True):
    """The judge's side of a run: its evidence, or why it gave no verdict."""

    model: str
    evidence: str | None = None
    error: str | None = None  # set exactly when the run's success is None
    raw: str = ""  # the judge's last answer, as it was written
    attempts: int = 0


class ProbeRecord(msgspec.Struct, frozen=True):
    """One two-turn run of one mode."""

    run_id: int  # the run's index; the same index is the same Turn 1 in every mode
    mode: str  # static | adaptive | bandit
    seed: int  # derived from (probe seed, run_id) only, never from the mode
    target: str
    prompt_id: str
    prompt: str
    prompt_category: str
    category: str  # the classifier's reading of the Turn-1 answer
    classifier_evidence: dict[str, Any]
    strategy: str
    rationale: str
    success: bool | None  # did Turn 2 contradict Turn 1? None: the judge gave no verdict
    judge: JudgeOutcome
    conversation: list[Message]
    usage: dict[str, Usage]  # by role: target, judge
    timings: dict[str, float]  # seconds: turn1, turn2, judge, total
    finish_reasons: dict[str, str | None] = msgspec.field(default_factory=dict)

    @property
    def turn1_answer(self) -> str:
        return _answers(self.conversation)[0]

    @property
    def turn2_message(self) -> str:
        return [m.content for m in self.conversation if m.role == "user"][-1]

    @property
    def turn2_answer(self) -> str:
        return _answers(self.conversation)[-1]


def _answers(conversation: list[Message]) -> list[str]:
    return [m.content for m in conversation if m.role == "assistant"] or [""]


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(ProbeRecord)


def log_path(directory: Path, mode: str) -> Path:
    return directory / f"{mode}.jsonl"


class ProbeLog:
    """Appends a mode's records in run order, each flushed as soon as it is next in line."""

    def __init__(self, path: Path, first_run: int = 0):
        self.path = path
        self._next = first_run
        self._held: dict[int, ProbeRecord] = {}
        self._file: BinaryIO = path.open("ab")
        self.written = 0

    def add(self, record: ProbeRecord) -> None:
        self._held[record.run_id] = record
        while self._next in self._held:
            self._write(self._held.pop(self._next))
            self._next += 1
        self._file.flush()

    def _write(self, record: ProbeRecord) -> None:
        self._file.write(_ENCODER.encode(record) + b"\n")
        self.written += 1

    def close(self) -> None:
        """Write whatever is held (in order, gaps and all) and close the file."""
        for run_id in sorted(self._held):
            self._write(self._held[run_id])
        self._held.clear()
        self._file.flush()
        self._file.close()


def read_log(path: Path) -> list[ProbeRecord]:
    """Every record of a log; a torn last line (a probe killed mid-write) is left out."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError as err:
        raise LoomError(f"{path}: cannot read the probe log ({err.strerror})") from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(_DECODER.decode(line))
        except msgspec.DecodeError as err:
            if number == len(lines):
                break
            raise LoomError(f"{path}:{number}: not a probe record ({err})") from None
    return records
