"""Append-only JSON-lines logs: a torn last line is cut off, a bad line elsewhere is located."""

from __future__ import annotations

import msgspec
import pytest

from loom_sim.errors import LoomError
from loom_sim.store.jsonl import JsonLines


class Row(msgspec.Struct):
    n: int


def test_a_torn_last_line_is_cut_off_and_appending_resumes_cleanly(tmp_path):
    path = tmp_path / "log.jsonl"
    log = JsonLines(path, Row)
    log.append(Row(0))
    log.append(Row(1))
    log.close()
    with path.open("ab") as fh:
        fh.write(b'{"n": 2')  # killed mid-write
    again = JsonLines(path, Row)
    assert again.load() == [Row(0), Row(1)]
    again.append(Row(2))
    again.close()
    assert JsonLines(path, Row).load() == [Row(0), Row(1), Row(2)]


def test_a_bad_line_before_the_end_is_an_error_naming_it(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 0}\nnot json\n{"n": 2}\n')
    with pytest.raises(LoomError, match=r"log.jsonl:2: not a row"):
        JsonLines(path, Row, "row").load()
    assert path.read_bytes().count(b"\n") == 3  # nothing was thrown away
