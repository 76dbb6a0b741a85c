"""The run directory and the files in it.

results/<config-stem>-<hash8>-<UTC time>/
    run.json                 resolved config, seed, arguments, versions, models (no secrets)
    rollout_000/turns.jsonl  one TurnRecord per completed turn, flushed as it completes
    rollout_000/transcript.json   when the rollout ends
    rollout_000/trace.jsonl  every envelope
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Generic, Protocol, TypeVar

import msgspec

from loom_sim.errors import LoomError
from loom_sim.store.records import (
    TRANSCRIPT_DECODER,
    TURN_DECODER,
    TURN_ENCODER,
    Transcript,
    TurnRecord,
)


class Numbered(Protocol):
    """A log record: anything numbered 0, 1, 2... by its ``turn``."""

    @property
    def turn(self) -> int: ...


R = TypeVar("R", bound=Numbered)

TURNS_FILE = "turns.jsonl"
TRANSCRIPT_FILE = "transcript.json"
TRACE_FILE = "trace.jsonl"


def config_hash(config_data: dict[str, Any]) -> str:
    canonical = json.dumps(config_data, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(canonical).hexdigest()


def new_run_dir(root: Path, config_stem: str, config_data: dict[str, Any]) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return unique_dir(root / f"{config_stem}-{config_hash(config_data)[:8]}-{stamp}")


def unique_dir(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``... when two runs start in the same second."""
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def rollout_dir(run_dir: Path, index: int) -> Path:
    return run_dir / f"rollout_{index:03d}"


def write_json(path: Path, data: Any) -> None:
    """Write atomically: a reader (or a resumed run) never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n")
    os.replace(tmp, path)


class TurnLog(Generic[R]):
    """``turns.jsonl``: append-only, one line per completed turn, flushed at once.

    Flushed, not fsynced: a killed process loses nothing the OS has been given; only a power
    cut could, and fsync per turn would cost more than the turn's own bookkeeping. Rollouts log
    :class:`TurnRecord`; another kind of session gives its own record type (anything with a
    ``turn`` number) as ``decoder``.
    """

    def __init__(self, path: Path, decoder: msgspec.json.Decoder[R] = TURN_DECODER):  # type: ignore[assignment]
        self.path = path
        self._decoder = decoder
        self._file: BinaryIO | None = None

    def append(self, record: R) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab")
        self._file.write(TURN_ENCODER.encode(record) + b"\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def load(self) -> list[R]:
        """Every complete record; a torn last line (the process died mid-write) is cut off."""
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        records: list[R] = []
        good = 0
        for line in raw.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                records.append(self._decoder.decode(line))
            except msgspec.DecodeError:
                break
            good += len(line)
        if good != len(raw):
            with self.path.open("r+b") as fh:
                fh.truncate(good)
        # Turn numbers must run 0, 1, 2...: anything else is not ours to continue.
        for expected, record in enumerate(records):
            if record.turn != expected:
                raise LoomError(
                    f"{self.path}: turn {record.turn} found where {expected} was expected"
                )
        return records


@dataclass(frozen=True)
class RolloutFiles:
    dir: Path

    @property
    def turns(self) -> TurnLog[TurnRecord]:
        return TurnLog(self.dir / TURNS_FILE)

    @property
    def trace(self) -> Path:
        return self.dir / TRACE_FILE

    @property
    def transcript_path(self) -> Path:
        return self.dir / TRANSCRIPT_FILE

    def transcript(self) -> Transcript | None:
        if not self.transcript_path.exists():
            return None
        return TRANSCRIPT_DECODER.decode(self.transcript_path.read_bytes())

    def write_transcript(self, transcript: Transcript) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.transcript_path, transcript)
