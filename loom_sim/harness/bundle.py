"""A session's bundle: its artifact files, in one folder per scenario run.

    <run>/<scenario>-<n>/
        session.json        resolved persona, scenario, policy, target, models, seeds, versions
        turns.jsonl         the commit log (one record per completed turn; resume reads it)
        setup.jsonl         each start of the target: greeting, setup lines
        transcript.jsonl    user_input / command / assistant_output records
        reflections.jsonl   one reflection per turn, its eight fields exactly
        events.jsonl        the target's events (and the adapter's notes), by turn
        scorecard.json      the six components and the gate
        summary.json        the compact outcome
        trace.jsonl         every message between the actors
        session.cast        the terminal session (pty targets), asciicast v2
        inputs/             the scenario's files, copied
        target/             the target's own folder (its outputs, its event file)

The three views are appended as turns complete and rewritten from the logs when a session
resumes. ``summary.json`` and ``scorecard.json`` hold no times and no absolute paths: a
seeded run with scripted models writes them byte for byte the same every time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from loom_sim.harness.messages import Reflection
from loom_sim.harness.records import (
    EVENTS_FILE,
    REFLECTIONS_FILE,
    SETUP_DECODER,
    SETUP_FILE,
    TRANSCRIPT_FILE,
    TURN_DECODER,
    TURNS_FILE,
    HarnessTurn,
    Reply,
    SetupRecord,
)
from loom_sim.store.artifacts import TurnLog, write_json


def _line(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False) + "\n"


def reflection_record(reflection: Reflection) -> dict[str, Any]:
    """The eight fields, in their fixed order."""
    return {
        "turn": reflection.turn,
        "action_taken": reflection.action_taken,
        "observed_signals": reflection.observed_signals,
        "what_worked": reflection.what_worked,
        "what_failed": reflection.what_failed,
        "open_questions": reflection.open_questions,
        "next_hypothesis": reflection.next_hypothesis,
        "confidence": reflection.confidence,
    }


def _outcome(reply: Reply) -> dict[str, Any]:
    """Why a reply failed, or that it printed nothing (which is not a failure)."""
    if reply.failure:
        return {"failure": reply.failure}
    return {"output": "none"} if reply.silent else {}


def setup_lines(setup: SetupRecord) -> tuple[list[str], list[str]]:
    """(transcript lines, events lines) of one start of the target."""
    phase = "setup" if setup.start == 0 else f"setup (restart {setup.start})"
    transcript = [
        _line(
            {
                "turn": None,
                "phase": phase,
                "kind": "assistant_output",
                "text": setup.greeting.text,
                "ended_by": setup.greeting.ended_by,
            }
        )
    ]
    events = [
        _line({"turn": None, "phase": phase, "orphan": True, "event": e})
        for e in setup.orphaned_events
    ]
    events += [_line({"turn": None, "phase": phase, "event": e}) for e in setup.events]
    for exchange in setup.exchanges:
        transcript.append(
            _line({"turn": None, "phase": phase, "kind": "command", "text": exchange.line})
        )
        transcript.append(
            _line(
                {
                    "turn": None,
                    "phase": phase,
                    "kind": "assistant_output",
                    "text": exchange.reply.text,
                    "ended_by": exchange.reply.ended_by,
                    "failed": exchange.reply.failed,
                    **_outcome(exchange.reply),
                }
            )
        )
        events += [_line({"turn": None, "phase": phase, "event": e}) for e in exchange.events]
    return transcript, events


def turn_lines(turn: HarnessTurn) -> tuple[list[str], list[str], list[str]]:
    """(transcript lines, reflection line, events lines) of one turn."""
    action = turn.action
    said: dict[str, Any] = {"turn": turn.turn}
    if action.kind == "command":
        said.update(kind="command", text=action.text, name=action.name, args=list(action.args))
    else:
        said.update(kind="user_input", text=action.text)
    answer = {
        "turn": turn.turn,
        "kind": "assistant_output",
        "text": turn.reply.text,
        "ended_by": turn.reply.ended_by,
        "failed": turn.failed,
    }
    if turn.failure:
        answer["failure"] = turn.failure
    elif turn.reply.silent:
        answer["output"] = "none"
    if turn.reply.continuation is not None:
        answer["continuation"] = {"prompt": turn.reply.continuation, "reset": turn.reply.reset}
    if turn.reply.truncated:
        answer["truncated"] = True
    events = [_line({"turn": turn.turn, "event": e}) for e in turn.events]
    return [_line(said), _line(answer)], [_line(reflection_record(turn.reflection))], events


class Bundle:
    def __init__(self, folder: Path):
        self.dir = folder

    def path(self, name: str) -> Path:
        return self.dir / name

    @property
    def turns(self) -> TurnLog[HarnessTurn]:
        return TurnLog(self.dir / TURNS_FILE, TURN_DECODER)

    @property
    def setups(self) -> TurnLog[SetupRecord]:
        return TurnLog(self.dir / SETUP_FILE, SETUP_DECODER)

    def _append(self, name: str, lines: Iterable[str]) -> None:
        lines = list(lines)
        if lines:
            with (self.dir / name).open("a", encoding="utf-8") as fh:
                fh.writelines(lines)

    def add_setup(self, setup: SetupRecord) -> None:
        transcript, events = setup_lines(setup)
        self._append(TRANSCRIPT_FILE, transcript)
        self._append(EVENTS_FILE, events)

    def add_turn(self, turn: HarnessTurn) -> None:
        transcript, reflection, events = turn_lines(turn)
        self._append(TRANSCRIPT_FILE, transcript)
        self._append(REFLECTIONS_FILE, reflection)
        self._append(EVENTS_FILE, events)

    def rebuild(self, setups: list[SetupRecord], turns: list[HarnessTurn]) -> None:
        """Rewrite the three views from the logs (atomically), so that they hold exactly the
        committed turns: what a killed session wrote past its last commit is gone."""
        views: dict[str, list[str]] = {TRANSCRIPT_FILE: [], REFLECTIONS_FILE: [], EVENTS_FILE: []}
        pending = sorted(setups, key=lambda s: s.start)
        for index in range(len(turns) + 1):
            while pending and pending[0].after_turn <= index:
                transcript, events = setup_lines(pending.pop(0))
                views[TRANSCRIPT_FILE] += transcript
                views[EVENTS_FILE] += events
            if index < len(turns):
                transcript, reflection, events = turn_lines(turns[index])
                views[TRANSCRIPT_FILE] += transcript
                views[REFLECTIONS_FILE] += reflection
                views[EVENTS_FILE] += events
        for name, lines in views.items():
            path = self.dir / name
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(lines), encoding="utf-8")
            os.replace(tmp, path)

    def write(self, name: str, data: Any) -> None:
        write_json(self.dir / name, data)
