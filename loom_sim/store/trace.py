"""The trace: every envelope of a rollout, one JSON line each, in ``trace.jsonl``.

Envelopes are buffered and written at turn boundaries (and when a rollout ends), so tracing
costs a few microseconds per message on the event loop; a killed process loses at most the
trace of the turn in progress, which its resumed run repeats anyway.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import msgspec

from loom_sim.messages import Envelope

_ENCODER = msgspec.json.Encoder()


class TraceRecorder:
    def __init__(self, path: Path | None):
        self._path = path
        self._file: BinaryIO | None = None  # opened at the first flush, off the start-up path
        self._pending: list[bytes] = []
        self.count = 0

    def record(self, envelope: Envelope) -> None:
        self.count += 1
        if self._path is not None:
            self._pending.append(_ENCODER.encode(envelope))

    def flush(self) -> None:
        if self._path is None or not self._pending:
            return
        if self._file is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self._path.open("ab")
        self._pending.append(b"")
        self._file.write(b"\n".join(self._pending))
        self._file.flush()
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def read_trace(path: Path) -> list[Envelope]:
    """Every envelope in a trace file (a torn last line from a killed run is ignored)."""
    from loom_sim.messages import ENVELOPE_DECODER

    envelopes = []
    for line in path.read_bytes().splitlines():
        try:
            envelopes.append(ENVELOPE_DECODER.decode(line))
        except msgspec.DecodeError:
            continue
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
            text = f"turn {body.turn} exchange committed"
        case m.CheckCandidate():
            text = f"attempt {body.attempt}: {body.text}"
        case m.Verdict():
            text = (
                "accepted"
                if body.accepted
                else "rejected: " + ", ".join(e.pattern for e in body.events)
            )
        case m.Observe():
            text = f"turn {body.turn} exchange"
        case m.Observation():
            text = ", ".join(f"{e.monitor}:{e.pattern}" for e in body.events) or "nothing to report"
        case m.Judge():
            text = f"rubric {body.rubric_id or '?'} over turns {[w.turn for w in body.window]}"
        case m.Judgement():
            text = f"ok {body.parsed}" if body.ok else f"failed: {body.error}"
        case m.Failure():
            text = f"{body.kind}: {body.error}"
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
