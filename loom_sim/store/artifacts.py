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
from typing import Any

import msgspec

from loom_sim.errors import LoomError
from loom_sim.store.jsonl import JsonLines
from loom_sim.store.records import TRANSCRIPT_DECODER, Transcript, TurnRecord

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


class TurnLog(JsonLines[TurnRecord]):
    """``turns.jsonl``: append-only, one line per completed turn, flushed at once."""

    def __init__(self, path: Path):
        super().__init__(path, TurnRecord, "turn record")

    def load(self) -> list[TurnRecord]:
        """Every complete record; a torn last line (the process died mid-write) is cut off."""
        records = super().load()
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
    def turns(self) -> TurnLog:
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
