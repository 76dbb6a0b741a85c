"""A debate, read back from its files: the thread, where rooms opened, each card with the
messages it cites — as data (:func:`load_debate`), Markdown and a self-contained HTML page.

Every text in a debate is model output, hence untrusted: the HTML template autoescapes
everything, and the page fetches nothing and runs no script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from loom_sim.core.html import html_environment
from loom_sim.debate.cards import CardRecord, RejectedCard
from loom_sim.debate.files import DebateFiles, DebateRecord, Summary, tally
from loom_sim.debate.records import ChatTurn, DetectionRound, ExitCheck, RoomLine, RoomStart
from loom_sim.debate.verdicts import card_trust, detection_trust, planted_lines


@dataclass
class RoomView:
    start: RoomStart
    lines: list[RoomLine]
    card: CardRecord | None = None
    rejected: RejectedCard | None = None


@dataclass
class DebateView:
    """Everything a reader of one debate needs, from its files alone."""

    dir: Path
    record: DebateRecord
    names: dict[str, str]
    turns: list[ChatTurn]
    rounds: list[DetectionRound]
    rooms: list[RoomView]
    summary: Summary
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (speaker, text)

    def name(self, persona: str) -> str:
        return self.names.get(persona, persona)

    def rooms_after(self, message: str | None) -> list[RoomView]:
        return [r for r in self.rooms if r.start.last_message == message]

    def planted(self) -> list[str]:
        """Whether the crux the deck planted was found (nothing when it planted no key)."""
        types = {r.start.id: r.card.card["type"] for r in self.rooms if r.card is not None}
        starts = [r.start for r in self.rooms]
        return planted_lines(self.record.deck.get("planted"), starts, types, self.name)

    def detection_trust(self) -> str:
        detection = self.record.deck.get("debate", {}).get("detection", {})
        spec = self.record.models.get("detection", {}).get("spec", "")
        return detection_trust(spec, detection.get("similarity", "embedding"))

    def card_trust(self) -> str:
        detection = self.record.deck.get("debate", {}).get("detection", {})
        spec = self.record.models.get("card", {}).get("spec", "")
        return card_trust(spec, detection.get("similarity", "embedding"))

    def type_reading(self, given: str, reading: dict[str, Any] | None) -> str:
        return type_reading(given, reading)

    def cited(self, ids: list[str]) -> list[tuple[str, str, str]]:
        """(id, speaker name, text) of each cited message ("?" when it is not in the files)."""
        out = []
        for mid in ids:
            speaker, text = self.texts.get(mid, ("?", "(not found)"))
            out.append((mid, self.name(speaker), text))
        return out


def load_debate(directory: Path) -> DebateView:
    files = DebateFiles(directory)
    record = files.read_plan()
    names = {p["id"]: p["name"] for p in record.deck["personas"]}
    turns = files.messages().load()
    rounds = files.detections().load()
    cards = files.cards()
    texts = {t.id: (t.speaker, t.text) for t in turns if t.id}
    rooms = []
    for start in (s for r in rounds for s in r.rooms):
        lines = files.room(start.id).load()
        for line in lines:
            if not isinstance(line, ExitCheck) and line.id:
                texts[line.id] = (line.speaker, line.text)
        rooms.append(
            RoomView(
                start,
                lines,
                next((c for c in cards.cards if c.room == start.id), None),
                next((c for c in cards.rejected if c.room == start.id), None),
            )
        )
    summary = files.summary() or tally(files)
    return DebateView(directory, record, names, turns, rounds, rooms, summary, texts)


# ─── Markdown ───────────────────────────────────────────────────────────────


def _usage(summary: Summary) -> list[str]:
    rows = ["| role | input tokens | output tokens | cost (USD) |", "| --- | ---: | ---: | ---: |"]
    for role, usage in summary.usage.items():
        cost = usage.get("cost_usd")
        rows.append(
            f"| {role} | {usage.get('input_tokens', 0)} | {usage.get('output_tokens', 0)} | "
            f"{'unknown' if cost is None else f'{cost:.4f}'} |"
        )
    return rows


def _turn_md(view: DebateView, turn: ChatTurn) -> str:
    head = f"**{turn.id or f'turn {turn.turn}'}** {view.name(turn.speaker)}"
    head += f" · {turn.intent or turn.kind}"
    if turn.reply_to:
        head += f" → {turn.reply_to}"
    if turn.said:
        body = turn.text
    else:
        reasons = "; ".join(turn.rejected[-1].reasons) if turn.rejected else turn.error or ""
        body = f"*failed turn after {len(turn.rejected)} refused drafts: {reasons}*"
    redrafts = f" *(redrafted {len(turn.rejected)}×)*" if turn.said and turn.rejected else ""
    return f"- {head}: {body}{redrafts}"


def type_reading(given: str, reading: dict[str, Any] | None) -> str:
    """The learned check's reading of a card's type, as the report shows it beside the type
    the card's writer gave ("" when there is none: a TF-IDF run)."""
    if not reading:
        return ""
    said = "agrees" if reading["type"] == given else f"reads {reading['type']}"
    near = ", uncertain" if reading.get("uncertain") else ""
    return f" (the learned reading {said}, {reading['probability']:.2f}{near})"


def _card_md(view: DebateView, room: RoomView) -> list[str]:
    if room.card is None:
        if room.rejected is not None:
            return [f"No valid card: {'; '.join(room.rejected.problems[-1:])}"]
        return ["No card yet (the room did not finish)."]
    card = room.card.card
    out = [
        f"**{room.card.id}: {card['crux']}** — {card['type']} disagreement"
        f"{type_reading(card['type'], room.card.type_reading)}, "
        f"{'resolved' if card['resolved'] else 'unresolved'}",
        "",
        f"{card['diagnosis']} ({', '.join(card['diagnosis_cites'])})",
        "",
        f"Resolution: {card['resolution']}" if card["resolution"] else "",
        "",
    ]
    for position in card["positions"]:
        out.append(
            f"- **{view.name(position['persona'])}: {position['stance']}.** "
            f"{position['reasoning']} Would change their mind: {position['falsifier']}"
        )
        for mid, name, text in view.cited(position["cites"]):
            near = room.card.uncertain.get(mid)
            mark = (
                f" *(uncertain: the learned check alone, {near:.2f})*" if near is not None else ""
            )
            out.append(f"  - {mid} ({name}): {text}{mark}")
    return out


def markdown(view: DebateView) -> str:
    record, summary = view.record, view.summary
    out = [
        f"# Debate: {record.topic}",
        "",
        f"Deck **{record.deck['name']}** · personas "
        + ", ".join(view.name(p) for p in record.personas)
        + f" · seed {record.seed} · templates {record.versions.get('debate_templates')}",
        "",
        f"Status **{summary.status or 'running'}**"
        + (f" ({summary.stop_detail})" if summary.stop_detail else "")
        + (f": {summary.error}" if summary.error else "")
        + f" · {summary.said} messages, {summary.failed} failed turns, {summary.rounds} detection "
        f"rounds, {summary.rooms} crux rooms, {summary.cards} cards",
        "",
        "Models: " + ", ".join(f"{role} {m['spec']}" for role, m in record.models.items()),
        "",
    ]
    if planted := view.planted():
        out += ["## Planted crux", ""] + [f"- {line}" for line in planted] + [""]
    out += ["## The thread", ""]
    rooms_done: set[str] = set()
    for turn in view.turns:
        out.append(_turn_md(view, turn))
        if turn.id:
            for room in view.rooms_after(turn.id):
                rooms_done.add(room.start.id)
                out.append(
                    f"- ▶ **crux room {room.start.id}** opened: {view.name(room.start.pair[0])} × "
                    f"{view.name(room.start.pair[1])} on “{room.start.question}”"
                )
    out += ["", "## Crux rooms", ""]
    if not view.rooms:
        out.append("No crux room opened.")
    else:
        out += [view.card_trust(), ""]
    for room in view.rooms:
        start = room.start
        out += [
            f"### {start.id}: {view.name(start.pair[0])} × {view.name(start.pair[1])}",
            "",
            f"On “{start.question}”, opened after {start.after} messages.",
            "",
        ]
        for line in room.lines:
            if isinstance(line, ExitCheck):
                verdict = f"surfaced ({line.how})" if line.surfaced else "not yet"
                out.append(f"- *exit check after {line.after} exchanges: {verdict}. {line.reason}*")
            elif line.said:
                out.append(f"- **{line.id}** {view.name(line.speaker)}: {line.text}")
            else:
                out.append(f"- *{view.name(line.speaker)}: failed message*")
        out += ["", *_card_md(view, room), ""]
    out += ["## Detection rounds", "", view.detection_trust(), ""]
    out += ["| round | after | strongest pair | gate | learned | asked | found | decision |"]
    out += ["| ---: | ---: | --- | ---: | --- | --- | --- | --- |"]
    for r in view.rounds:
        top = max(r.signals, key=lambda s: s.opposition, default=None)
        pair = " × ".join(view.name(p) for p in top.pair) if top else "—"
        read = [s for s in r.signals if s.learned is not None]
        learned = (
            "; ".join(
                f"{' × '.join(view.name(p) for p in s.pair)} {s.learned:.2f} "
                + ("opposed" if s.opposed else "not opposed")
                + (", uncertain" if s.uncertain else "")
                for s in read
                if s.opposed or s.uncertain
            )
            or "none opposed"
            if read
            else "—"
        )
        found = "; ".join(f"{' × '.join(d.pair)} {d.confidence:.2f}" for d in r.found) or "—"
        decided = "; ".join(
            ("spawn " + ", ".join(s.id for s in r.rooms)) if d.spawn else ", ".join(d.held_back)
            for d in r.decisions
        )
        out.append(
            f"| {r.round} | {r.after} | {pair} | {r.gate:.2f} | {learned} | "
            f"{'yes' if r.asked else 'no'} | "
            f"{found} | {decided or '—'} |"
        )
    out += ["", "## Usage by role", "", *_usage(summary), ""]
    return "\n".join(out)


# ─── HTML ───────────────────────────────────────────────────────────────────


@cache
def _template() -> jinja2.Template:
    return html_environment("loom_sim.debate", ".").get_template("report.html.j2")


def html(view: DebateView) -> str:
    return _template().render(view=view)


def write_report(directory: Path) -> list[Path]:
    view = load_debate(directory)
    md = directory / "report.md"
    page = directory / "report.html"
    md.write_text(markdown(view), encoding="utf-8")
    page.write_text(html(view), encoding="utf-8")
    return [md, page]


def card_rows(view: DebateView) -> list[dict[str, Any]]:
    """One row per card, for tables."""
    return [
        {"id": r.card.id, "room": r.start.id, **r.card.card}
        for r in view.rooms
        if r.card is not None
    ]
