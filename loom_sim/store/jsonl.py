"""Append-only JSON Lines files — ``turns.jsonl``, ``trace.jsonl``, ``score_trace.jsonl`` —
with one rule for reading them and one for repairing them.

Every line is written whole, newline included, in one ``write``: a process killed mid-write
leaves at most one *torn* line, at the very end. That tail is the record of work that did not
finish; it is cut before anything is appended, so the next line never glues onto it and turns
it into damage in the middle of the file.

A line in the middle that does not decode is not a tear: something else damaged the file. The
reader stops there, naming the file and the line and saying what to do; it never drops the
valid lines after it, and it changes nothing (a resumed run would otherwise redo, and so
silently rewrite, every turn after the damage).

:class:`JsonLines` is that file for any record type (the debate's logs, a harness session's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from loom_sim.errors import LoomError

T = TypeVar("T")


class WriteFailed(LoomError):
    """The disk refused a write (full, read-only, gone): which file, and why, in words."""

    def __init__(self, path: Path, err: OSError):
        self.path = path
        why = (err.strerror or str(err) or type(err).__name__).lower()
        super().__init__(f"cannot write {path}: {why}")


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into :class:`WriteFailed`."""
    try:
        yield
    except OSError as err:
        raise WriteFailed(path, err) from None


class DamagedFile(LoomError):
    """An append-only file with a line that is neither a record nor a torn last line."""

    def __init__(self, path: Path, number: int, after: int, what: str, why: str, advice: str):
        self.path, self.line, self.after = path, number, after  # after: valid records after it
        super().__init__(f"{path}:{number}: not {what} ({why}); {advice}")


def _complete(raw: bytes) -> tuple[list[bytes], int]:
    """The complete lines (newline kept) and the size of what they span; a last line without
    its newline is left out."""
    lines = raw.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines.pop()
    return lines, sum(len(line) for line in lines)


def _reason(err: Exception) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 80 else text[:79] + "…"


def read_records(
    path: Path,
    decode: Callable[[bytes], T],
    *,
    what: str,
    advice: Callable[[int, int], str],
) -> tuple[list[T], int]:
    """Every record of ``path`` and the byte size they span (anything after it is a torn tail:
    an incomplete last line, or a last line that does not decode).

    ``what`` names a record in the error ("a turn record"); ``advice(line, valid_after)`` says
    what to do about a damaged line with ``valid_after`` good records after it.
    """
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise LoomError(f"{path}: cannot read it ({err.strerror or err})") from None
    lines, _ = _complete(raw)
    records: list[T] = []
    good = 0
    for index, line in enumerate(lines):
        try:
            records.append(decode(line))
        except (msgspec.DecodeError, ValueError, TypeError) as err:
            if index == len(lines) - 1:
                break  # the last line: torn by a kill, cut by the next append
            after = sum(1 for rest in lines[index + 1 :] if _decodes(decode, rest))
            raise DamagedFile(
                path, index + 1, after, what, _reason(err), advice(index + 1, after)
            ) from None
        good += len(line)
    return records, good


def _decodes(decode: Callable[[bytes], object], line: bytes) -> bool:
    try:
        decode(line)
    except (msgspec.DecodeError, ValueError, TypeError):
        return False
    return True


def cut_torn_tail(path: Path, good: int | None = None) -> None:
    """Cut an incomplete last line (or ``path`` after ``good`` bytes) before appending."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if good is None:
        if size == 0:
            return
        with path.open("rb") as fh:
            fh.seek(max(0, size - 1))
            if fh.read(1) == b"\n":
                return
        good = _last_newline(path, size)
    if good < size:
        with path.open("r+b") as fh:
            fh.truncate(good)


def _last_newline(path: Path, size: int, chunk: int = 1 << 16) -> int:
    """The size of ``path`` up to and including its last newline (0 if it has none)."""
    with path.open("rb") as fh:
        end = size
        while end > 0:
            start = max(0, end - chunk)
            fh.seek(start)
            block = fh.read(end - start)
            at = block.rfind(b"\n")
            if at >= 0:
                return start + at + 1
            end = start
    return 0


def last_line(path: Path, chunk: int = 1 << 16) -> bytes | None:
    """The last complete line of ``path`` (None if it has none), read from the end."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    end = _last_newline(path, size)
    if end == 0:
        return None
    with path.open("rb") as fh:
        start = end - 1
        while start > 0:
            begin = max(0, start - chunk)
            fh.seek(begin)
            block = fh.read(start - begin)
            at = block.rfind(b"\n")
            if at >= 0:
                start = begin + at + 1
                break
            start = begin
        fh.seek(start)
        return fh.read(end - start)


def open_for_append(path: Path) -> BinaryIO:
    """``path`` opened to append, its torn tail cut first (the folder made if needed)."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        cut_torn_tail(path)
        return path.open("ab")


def append(file: BinaryIO, path: Path, data: bytes) -> None:
    """Write ``data`` (whole lines) and hand it to the OS at once."""
    with writing(path):
        file.write(data)
        file.flush()


_ENCODER = msgspec.json.Encoder()


class JsonLines(Generic[T]):
    """``path`` as an append-only log of ``kind`` records (a msgspec Struct, or a union of
    tagged ones, or a ready decoder of either), read and repaired by the rules above.

    The one log type: a kind of log with rules of its own (``turns.jsonl``: turns in order)
    subclasses it and says them in :meth:`_advice` and :meth:`_checked`.
    """

    def __init__(self, path: Path, kind: Any, what: str = "record"):
        # ``kind`` is a Struct type or a union of tagged ones (which is not a ``type[T]``)
        self.path = path
        self._decoder = (
            kind if isinstance(kind, msgspec.json.Decoder) else msgspec.json.Decoder(kind)
        )
        self._what = what
        self._file: BinaryIO | None = None

    def open(self) -> BinaryIO:
        """The file, opened to append now if it is not yet (the first :meth:`append` would
        open it otherwise): for a caller that creates its files ahead, off its event loop."""
        if self._file is None:
            self._file = open_for_append(self.path)
        return self._file

    def append(self, record: T) -> None:
        append(self.open(), self.path, _ENCODER.encode(record) + b"\n")

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError:  # a failed flush was reported by append
                pass

    def read(self) -> list[T]:
        """Every complete record, changing nothing (for a reader: a viewer must not write); a
        damaged line in the middle is a :class:`DamagedFile` naming it."""
        return self._read()[0]

    def load(self) -> list[T]:
        """Every complete record; a torn last line is cut off the file, so appending resumes
        on a clean line. A damaged line in the middle is a :class:`DamagedFile` naming it."""
        if not self.path.exists():
            return []
        records, good = self._read()
        cut_torn_tail(self.path, good)
        return records

    def _read(self) -> tuple[list[T], int]:
        if not self.path.exists():
            return [], 0
        article = "an" if self._what[:1] in "aeiou" else "a"
        records, good = read_records(
            self.path, self._decoder.decode, what=f"{article} {self._what}", advice=self._advice
        )
        return self._checked(records), good

    def _advice(self, line: int, after: int) -> str:
        """What to do about damaged line ``line`` with ``after`` valid lines after it."""
        return (
            f"{after} valid line{'s' if after != 1 else ''} follow it, so it is damage, "
            "not a torn last line; nothing was changed: repair or remove that line"
        )

    def _checked(self, records: list[T]) -> list[T]:
        """``records`` if they make a log of this kind; else a LoomError naming the line."""
        return records
