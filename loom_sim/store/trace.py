"""The trace: every envelope of a rollout, one JSON line each, in ``trace.jsonl``.

Envelopes are buffered and written at turn boundaries (and when a rollout ends), so tracing
costs a few microseconds per message on the event loop; a killed process loses at most the
trace of the turn in progress, which its resumed run repeats anyway.

Envelope ids are unique within a trace file across every session that appended to it: a
resumed run (or a second ``loom-sim score``) numbers on from the last id on disk, which may be
past the last completed turn's when an interrupted session wrote the trace of its turn in
progress.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import BinaryIO

import msgspec

from loom_sim.errors import LoomError
from loom_sim.messages import Envelope
from loom_sim.store.jsonl import DamagedFile, append, last_line, open_for_append, read_records

_ENCODER = msgspec.json.Encoder()


class _Id(msgspec.Struct):
    id: int


_ID = msgspec.json.Decoder(_Id)


class TraceRecorder:
    def __init__(self, path: Path | None):
        self._path = path
        self._file: BinaryIO | None = None  # opened at the first flush, off the start-up path
        self._pending: list[bytes] = []
        self.count = 0

    @property
    def next_id(self) -> int:
        """The first id free in this trace file: one past the last envelope's (1 if none)."""
        if self._path is None:
            return 1
        line = last_line(self._path)
        if line is None:
            return 1
        try:
            return _ID.decode(line).id + 1
        except msgspec.DecodeError:
            return 1  # a torn last line, cut at the first flush

    def record(self, envelope: Envelope) -> None:
        self.count += 1
        if self._path is not None:
            self._pending.append(_ENCODER.encode(envelope))

    def flush(self) -> None:
        if self._path is None or not self._pending:
            return
        if self._file is None:
            self._file = open_for_append(self._path)
        self._pending.append(b"")
        data = b"\n".join(self._pending)
        self._pending.clear()
        append(self._file, self._path, data)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._file is not None:
                file, self._file = self._file, None
                with contextlib.suppress(OSError):  # a failed flush was reported above
                    file.close()


def read_trace(path: Path) -> list[Envelope]:
    """Every envelope in a trace file (a torn last line from a killed run is ignored); a
    damaged line elsewhere, or a file with no envelope at all, is a plain error naming it."""
    from loom_sim.messages import ENVELOPE_DECODER

    def advice(line: int, after: int) -> str:
        return (
            f"{after} envelope{'s' if after != 1 else ''} follow it; the file was damaged "
            "after it was written (the trace is a record only: nothing else reads it)"
        )

    nothing = LoomError(f"{path}: holds no trace envelope (is it a loom-sim trace.jsonl?)")
    try:
        envelopes, _ = read_records(
            path, ENVELOPE_DECODER.decode, what="a trace envelope", advice=advice
        )
    except DamagedFile as err:
        if err.line == 1 and err.after == 0:
            raise nothing from None
        raise
    if not envelopes and path.read_bytes().strip():
        raise nothing
    return envelopes


def summarize(envelope: Envelope, width: int = 90) -> str:
    """One line saying what a message was about, for people reading a trace."""
    from loom_sim import messages as m

    body = envelope.body
    match body:
        case m.Speak():
            parts = [f"attempt {body.attempt}", f"injection {body.injection}"]
            parts += [name for name in ("reminder", "emergency", "vary") if getattr(body, name)]
            text = ", ".join(parts)
        case m.Utterance():
            text = body.text
        case m.Respond():
            text = body.text
        case m.Heard():
            text = f"turn {body.turn + 1} exchange committed"
        case m.CheckCandidate():
            text = f"attempt {body.attempt}: {body.text}"
        case m.Verdict():
            text = (
                "accepted"
                if body.accepted
                else "rejected: " + ", ".join(e.pattern for e in body.events)
            )
        case m.Observe():
            text = f"turn {body.turn + 1} exchange"
        case m.Observation():
            text = ", ".join(f"{e.monitor}:{e.pattern}" for e in body.events) or "nothing to report"
        case m.Judge():
            text = f"rubric {body.rubric_id or '?'} over turns {[w.turn + 1 for w in body.window]}"
        case m.Judgement():
            text = f"ok {body.parsed}" if body.ok else f"failed: {body.error}"
        case m.Failure():
            text = f"{body.kind}: {body.error}"
        case m.PlanAction():
            text = f"attempt {body.attempt}" + (
                f", after: {body.feedback}" if body.feedback else ""
            )
        case m.PlannedAction():
            text = ("gives up: " + body.reason) if body.gave_up else body.action.text
        case m.Observed():
            text = f"turn {body.turn}: {body.action.text}" + (" (failed)" if body.failed else "")
        case m.Dispatch():
            text = body.text
        case m.TargetReply():
            text = f"({body.ended_by}{', failed' if body.failed else ''}) {body.text}"
        case m.Reflect():
            text = f"turn {body.turn}: {body.action.text}"
        case m.Reflected():
            text = f"{body.status}, confidence {body.reflection.confidence}: "
            text += body.reflection.next_hypothesis
        case m.Evaluate():
            text = f"turn {body.turn}: {len(body.events)} events, {len(body.artifacts)} files"
        case m.Evaluation():
            text = f"progress {body.progress}: " + ", ".join(
                f"{r.id}={r.met}" for r in body.results
            )
        case m.Compose():
            why = f", redraft: {'; '.join(body.redraft)}" if body.redraft else ""
            text = f"{body.kind} {body.intent} attempt {body.attempt}{why}"
        case m.Assignment():
            text = f"{body.speaker} {body.kind} {body.intent} ({body.chosen})"
        case m.Posted():
            text = f"{body.line.id}: {body.line.text}"
        case m.Detection():
            found = ", ".join(f"{'/'.join(d.pair)} {d.confidence:.2f}" for d in body.found)
            text = f"gate {body.gate:.2f}, " + (
                f"asked: {found or 'none'}" if body.asked else "not asked"
            )
        case m.ExitVerdict():
            text = f"surfaced ({body.how})" if body.surfaced else body.error or "not surfaced"
        case m.CardAnswer():
            text = "card" if body.ok else "no card: " + "; ".join(body.problems[-1:])
        case _:
            text = type(body).__name__
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
