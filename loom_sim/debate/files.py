"""The debate directory and the files in it.

results/debate-<deck>-<UTC time>/
    debate.json          the plan: the deck as validated (contracts included), topic, personas,
                         resolved settings, seed, models by role, versions, the command line
    messages.jsonl       one ChatTurn per main-chat turn, said or failed, appended as it ends
    detections.jsonl     one DetectionRound per round: signals, findings, decisions, rooms
    rooms/<id>/transcript.jsonl   a room's messages and exit checks, appended as they happen
    cards.json           every card (and every rejected one), rewritten atomically
    trace.jsonl          every envelope between the actors
    summary.json         status, why it stopped, counts and usage by role (written when the
                         debate ends)
    report.md, report.html

Every file the debate appends to is crash-safe (:class:`~loom_sim.store.jsonl.JsonLines`): a
killed debate loses at most the message in progress, and ``loom-sim debate --resume DIR``
continues from the files alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from loom_sim.core.header import PlanHeader
from loom_sim.core.records import RecordFormat
from loom_sim.debate.cards import CardFile, CardRecord, RejectedCard
from loom_sim.debate.messages import Line
from loom_sim.debate.records import ChatTurn, DetectionRound, RoomLine, RoomMessage
from loom_sim.debate.stop import DebateStopReason, from_sentence
from loom_sim.errors import LoomError
from loom_sim.store.artifacts import write_json
from loom_sim.store.jsonl import JsonLines
from loom_sim.store.trace import read_trace

PLAN_FILE = "debate.json"
MESSAGES_FILE = "messages.jsonl"
DETECTIONS_FILE = "detections.jsonl"
CARDS_FILE = "cards.json"
TRACE_FILE = "trace.jsonl"
SUMMARY_FILE = "summary.json"
FORMAT_VERSION = 1


class DebateRecord(msgspec.Struct, kw_only=True):
    """``debate.json``: everything a resumed debate, a report or a reader needs, so nothing
    re-reads the deck file."""

    format_version: int = FORMAT_VERSION
    deck: dict[str, Any]
    deck_source: str
    deck_hash: str
    topic: str
    personas: list[str]
    seed: int
    models: dict[str, dict[str, Any]]  # role -> {spec, temperature, max_tokens}
    versions: dict[str, str]
    command: list[str] = msgspec.field(default_factory=list)
    base_url: str | None = None  # redacted: no credentials, no query
    created: str = ""
    header: PlanHeader | None = None  # the plan header every system's record carries


# Version 1 is the only one written; fields added later (the redacted command line and base
# URL, the plan header) have defaults, so files written before them still load.
DEBATE_FORMAT: RecordFormat[DebateRecord] = RecordFormat(
    DebateRecord, noun="debate file", version=FORMAT_VERSION
)


SUMMARY_VERSION = 2


class Summary(msgspec.Struct, kw_only=True):
    format_version: int = SUMMARY_VERSION
    status: str  # done | error
    stop_reason: DebateStopReason | None = None  # the key; None when unknown or in error
    stop_detail: str | None = None  # the sentence saying why
    error: str | None = None
    turns: int = 0
    said: int = 0
    failed: int = 0
    rounds: int = 0
    rooms: int = 0
    cards: int = 0
    rejected_cards: int = 0
    usage: dict[str, Any] = msgspec.field(default_factory=dict)  # role -> Usage
    resume: str | None = None  # the command that continues a stopped debate


def _sentence_to_reason(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (no ``format_version``) held only a sentence in ``stop_reason``: it becomes
    the detail, and the key is the reason that sentence stands for (None for one no rule
    writes, the words kept)."""
    sentence = data.get("stop_reason")
    if sentence is not None:
        data["stop_detail"] = sentence
        data["stop_reason"] = from_sentence(sentence)
    return data


SUMMARY_FORMAT: RecordFormat[Summary] = RecordFormat(
    Summary, noun="debate summary", version=SUMMARY_VERSION, migrations={1: _sentence_to_reason}
)


@dataclass(frozen=True)
class DebateFiles:
    dir: Path

    @property
    def plan(self) -> Path:
        return self.dir / PLAN_FILE

    @property
    def trace(self) -> Path:
        return self.dir / TRACE_FILE

    @property
    def cards_path(self) -> Path:
        return self.dir / CARDS_FILE

    def messages(self) -> JsonLines[ChatTurn]:
        return JsonLines(self.dir / MESSAGES_FILE, ChatTurn, "main-chat turn")

    def detections(self) -> JsonLines[DetectionRound]:
        return JsonLines(self.dir / DETECTIONS_FILE, DetectionRound, "detection round")

    def room(self, room: str) -> JsonLines[RoomLine]:
        return JsonLines(self.dir / "rooms" / room / "transcript.jsonl", RoomLine, "room line")

    def write_plan(self, record: DebateRecord) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.plan, record)

    def read_plan(self) -> DebateRecord:
        """``debate.json`` of any version this loom-sim reads; a newer or damaged one is one
        sentence naming it."""
        if not self.plan.exists():
            raise LoomError(f"{self.dir}: not a debate directory (no {PLAN_FILE})")
        return DEBATE_FORMAT.read(self.plan)

    def cards(self) -> CardFile:
        if not self.cards_path.exists():
            return CardFile()
        try:
            return msgspec.json.decode(self.cards_path.read_bytes(), type=CardFile)
        except msgspec.DecodeError as err:
            raise LoomError(f"{self.cards_path}: unreadable ({err})") from None

    def write_cards(self, cards: CardFile) -> None:
        write_json(self.cards_path, cards)

    def write_summary(self, summary: Summary) -> None:
        write_json(self.dir / SUMMARY_FILE, summary)

    def summary(self) -> Summary | None:
        path = self.dir / SUMMARY_FILE
        if not path.exists():
            return None
        return SUMMARY_FORMAT.read(path)


@dataclass
class Resumed:
    """A debate's state, read back from its files."""

    turns: list[ChatTurn] = field(default_factory=list)
    rounds: list[DetectionRound] = field(default_factory=list)
    cards: CardFile = field(default_factory=CardFile)
    rooms: dict[str, list[RoomLine]] = field(default_factory=dict)
    next_envelope: int = 1

    @classmethod
    def load(cls, files: DebateFiles) -> Resumed:
        turns = files.messages().load()
        for expected, turn in enumerate(turns):
            if turn.turn != expected:
                raise LoomError(
                    f"{files.dir}/messages.jsonl: turn {turn.turn} found where {expected} was "
                    "expected"
                )
        rounds = files.detections().load()
        rooms = {start.id: files.room(start.id).load() for r in rounds for start in r.rooms}
        last = (
            max((e.id for e in read_trace(files.trace)), default=0) if files.trace.exists() else 0
        )
        return cls(turns, rounds, files.cards(), rooms, last + 1)

    @property
    def main(self) -> list[Line]:
        return [Line(t.id, t.speaker, t.text, t.reply_to) for t in self.turns if t.said and t.id]


def is_debate_dir(path: Path) -> bool:
    return path.is_dir() and (path / PLAN_FILE).is_file()


def tally(files: DebateFiles) -> Summary:
    """Counts and usage by role, read from the files themselves (so a resumed debate's totals
    are the sum of what is on disk, never of what one process happened to see)."""
    from loom_sim.debate.records import ExitCheck
    from loom_sim.models.base import Usage

    usage: dict[str, Usage] = {}

    def charge(role: str, spent: Usage) -> None:
        usage[role] = usage[role] + spent if role in usage else spent

    turns = files.messages().load()
    rounds = files.detections().load()
    cards = files.cards()
    rooms = [start for r in rounds for start in r.rooms]
    for turn in turns:
        charge(turn.kind, turn.usage)
    for detection in rounds:
        if detection.asked:
            charge("detection", detection.usage)
    for start in rooms:
        for line in files.room(start.id).load():
            if isinstance(line, RoomMessage):
                charge(line.kind, line.usage)
            elif isinstance(line, ExitCheck):
                charge("exit_check", line.usage)
    outcomes: list[CardRecord | RejectedCard] = [*cards.cards, *cards.rejected]
    for outcome in outcomes:
        charge("card", outcome.usage)
    said = sum(1 for t in turns if t.said)
    return Summary(
        status="",
        turns=len(turns),
        said=said,
        failed=len(turns) - said,
        rounds=len(rounds),
        rooms=len(rooms),
        cards=len(cards.cards),
        rejected_cards=len(cards.rejected),
        usage={role: msgspec.to_builtins(u) for role, u in usage.items()},
    )
