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
from typing import Any, Protocol, TypeVar

import msgspec

from loom_sim.errors import LoomError
from loom_sim.store.jsonl import JsonLines, writing
from loom_sim.store.records import (
    TRANSCRIPT_DECODER,
    TURN_DECODER,
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


def encode_json(data: Any) -> bytes:
    """``data`` as the indented JSON that :func:`write_json` writes."""
    return msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n"


def write_json(path: Path, data: Any, encoded: bytes | None = None) -> None:
    """Write atomically: a reader (or a resumed run) never sees half a file, and a failed
    write (a full disk) leaves the previous version in place. ``encoded``: ``data`` already
    through :func:`encode_json` (a caller that writes in a worker thread encodes first, on
    its own thread: the encoded bytes are then allocated, and freed, on that thread's heap)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with writing(path):
        try:
            tmp.write_bytes(encode_json(data) if encoded is None else encoded)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def read_transcript(path: Path) -> Transcript:
    """A ``transcript.json``; one sentence naming it, and how to rebuild it, when unusable."""
    try:
        return TRANSCRIPT_DECODER.decode(path.read_bytes())
    except OSError as err:
        raise LoomError(f"{path}: cannot read it ({err.strerror or err})") from None
    except msgspec.DecodeError as err:
        raise LoomError(
            f"{path}: not a readable transcript ({err}); move it away and run "
            f"`loom-sim run --resume {path.parent.parent}` to rebuild it from "
            f"{TURNS_FILE} (its scores are then made again by scoring)"
        ) from None


class TurnLog(JsonLines[R]):
    """``turns.jsonl``: append-only, one line per completed turn, flushed at once — a
    :class:`~loom_sim.store.jsonl.JsonLines` whose lines are turns 0, 1, 2... in order.

    Flushed, not fsynced: a killed process loses nothing the OS has been given; only a power
    cut could, and fsync per turn would cost more than the turn's own bookkeeping. Rollouts log
    :class:`TurnRecord`; another kind of session gives its own record type (anything with a
    ``turn`` number) as ``decoder``. ``read`` changes nothing; ``load`` (for continuing the
    rollout) cuts a torn last line so the next turn is appended cleanly; a damaged line in the
    middle, or turns out of order, is a :class:`~loom_sim.errors.LoomError` naming the line.
    """

    def __init__(self, path: Path, decoder: msgspec.json.Decoder[R] = TURN_DECODER):  # type: ignore[assignment]
        super().__init__(path, decoder, "turn record")

    def _advice(self, line: int, after: int) -> str:
        path, kept = self.path, line - 1
        follow = f"{after} valid turn{'s' if after != 1 else ''} follow it"
        if not kept:
            keep = "or move the file away and resume to run this rollout again"
        else:
            kept_file = f"{path.name}.kept"
            keep = (
                f"or keep the first {kept} turn{'s' if kept != 1 else ''} (head -n {kept} "
                f"{path} > {kept_file} && mv {kept_file} {path}) and resume to run the "
                "rest again"
            )
        return f"{follow}, so it is damage, not a torn last line; nothing was changed: " + (
            f"repair that line, {keep}"
        )

    def _checked(self, records: list[R]) -> list[R]:
        # Turn numbers must run 0, 1, 2...: anything else is not ours to continue.
        for expected, record in enumerate(records):
            if record.turn != expected:
                raise LoomError(
                    f"{self.path}:{expected + 1}: turn {record.turn + 1} found where turn "
                    f"{expected + 1} belongs (lines are turns, in order); this file was edited "
                    "or mixed with another rollout's: restore it, or keep only the lines "
                    "before this one and resume"
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
        return read_transcript(self.transcript_path)

    def write_transcript(self, transcript: Transcript, encoded: bytes | None = None) -> None:
        """``transcript.json``, atomically; ``encoded``: as :func:`write_json` takes it."""
        with writing(self.dir):
            self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.transcript_path, transcript, encoded)
