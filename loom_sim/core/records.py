"""Versioned records: one way to read a JSON record into its typed struct, whatever version of
loom-sim wrote it.

Every record a system writes (``run.json``, ``probe.json``, ``report.json``, …) is a msgspec
struct with a format version. Reading one is always the same four steps, so they live here
once: read at most a bounded number of bytes from a regular file (a FIFO or a device put where
the file belongs is refused, never waited on); refuse a file that is not a JSON object, or that
a newer loom-sim wrote (this one would misread it), with one sentence naming the file; bring an
older file to the current shape, one step at a time; decode it into the struct, a damaged field
again one sentence naming the file. A record's own module says what its versions were and how
each step migrates, next to the struct.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from loom_sim.errors import LoomError

T = TypeVar("T")

# Records hold a config and a few hundred fields, a report a few thousand numbers: megabytes at
# most. Read at most this much, so a file swapped for something endless costs nothing.
MAX_RECORD_BYTES = 16 * 1024 * 1024

Migration = Callable[[dict[str, Any]], dict[str, Any]]


def read_bytes(path: Path, limit: int = MAX_RECORD_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; else one
    sentence. Opened without blocking and checked after opening, so a FIFO or a device put
    where a file belongs (or swapped in meanwhile) is refused, never waited on or read forever.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise LoomError(f"{path}: no such file") from None
    except OSError as err:
        raise LoomError(f"{path}: unreadable ({err.strerror or err})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise LoomError(f"{path}: unreadable (a folder, not a file)")
        if not stat.S_ISREG(mode):
            raise LoomError(f"{path}: unreadable (a pipe, socket or device, not a file)")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError as err:
        raise LoomError(f"{path}: unreadable ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise LoomError(f"{path}: unreadable (larger than {limit // 2**20} MB)")
    return data


class RecordFormat(Generic[T]):
    """How one kind of record is versioned, migrated and decoded.

    ``migrations[v]`` turns a version-``v`` record (as JSON data) into a version-``v + 1`` one;
    a record written at the current version may still need ``shape`` (a step that fixes fields
    an earlier loom-sim left out without bumping the version). ``version_key`` names the field
    that holds the version (an int, or a string of digits as ``report.json`` writes it);
    a file without it is version 1.
    """

    def __init__(
        self,
        struct: type[T],
        *,
        noun: str,
        version: int,
        version_key: str = "format_version",
        migrations: dict[int, Migration] | None = None,
        shape: Migration | None = None,
        limit: int = MAX_RECORD_BYTES,
    ) -> None:
        self.struct = struct
        self.noun = noun
        self.version = version
        self.version_key = version_key
        self.migrations = dict(migrations or {})
        self.shape = shape
        self.limit = limit
        self._decoder = msgspec.json.Decoder(struct)
        missing = [v for v in range(1, version) if v not in self.migrations]
        if missing:  # a programming error: every older version needs its step
            raise ValueError(f"{noun}: no migration from version {missing[0]}")

    def raw(self, path: Path, data: bytes | None = None) -> dict[str, Any]:
        """The file as JSON data, checked to be an object of a version this loom-sim reads."""
        if data is None:
            data = read_bytes(path, self.limit)
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError as err:
            raise LoomError(f"{path}: not a {self.noun} this loom-sim can read ({err})") from None
        if not isinstance(raw, dict):
            raise LoomError(f"{path}: not a {self.noun} (a JSON object was expected)")
        self.version_of(path, raw)
        return raw

    def version_of(self, path: Path, raw: dict[str, Any]) -> int:
        value = raw.get(self.version_key)
        version = 1 if value is None else value
        if isinstance(version, str) and version.isdigit():
            version = int(version)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise LoomError(
                f"{path}: {self.version_key} is {value!r}, which no loom-sim writes; "
                f"this {self.noun} was edited or damaged"
            )
        if version > self.version:
            raise LoomError(
                f"{path}: {self.noun} format {version} is newer than this loom-sim reads "
                f"({self.version}); upgrade loom-sim to read it"
            )
        return version

    def migrate(self, path: Path, raw: dict[str, Any]) -> dict[str, Any]:
        """``raw`` in the current shape (a copy when anything changed). A step written for
        the files that version wrote, given a damaged one, fails in its own terms: said as one
        sentence naming the file."""
        version = self.version_of(path, raw)
        try:
            return self._migrate(version, raw)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            raise LoomError(
                f"{path}: a {self.noun} of format {version} that this loom-sim cannot bring up "
                f"to date ({type(err).__name__}: {err}); it was edited or damaged"
            ) from None

    def _migrate(self, version: int, raw: dict[str, Any]) -> dict[str, Any]:
        data = dict(raw)
        if version < self.version:
            while version < self.version:
                data = self.migrations[version](data)
                version += 1
            stored = data.get(self.version_key)  # the current version, as this record says it
            data[self.version_key] = str(version) if isinstance(stored, str) else version
        if self.shape is not None:
            data = self.shape(data)
        return data

    def decode(self, path: Path, raw: dict[str, Any]) -> T:
        """The record from JSON data of any version this loom-sim reads."""
        try:
            return self._decoder.decode(msgspec.json.encode(self.migrate(path, raw)))
        except msgspec.ValidationError as err:
            raise LoomError(f"{path}: not a {self.noun} this loom-sim can read ({err})") from None

    def read(self, path: Path) -> T:
        """The record in ``path``; one plain sentence naming the file when it is not usable."""
        return self.decode(path, self.raw(path))
