"""``loom-sim view DEBATE_DIR``: a finished (or stopped) debate, read back as it streamed.

The debate's files are replayed through the live view (:class:`loom_sim.cli.debate.LiveDebate`):
each message with its speaker and intent, failed turns with why, the detection rounds that
asked the model, each room where it opened with its transcript and exit checks, and the card.
"""

from __future__ import annotations

import os
from pathlib import Path

from rich.panel import Panel
from rich.text import Text

from loom_sim.cli.console import safe_console
from loom_sim.cli.debate import LiveDebate
from loom_sim.debate.report import load_debate


def show_debate(path: Path, window: slice) -> None:
    view = load_debate(path)
    record, summary, names = view.record, view.summary, view.names
    console = safe_console(highlight=False, record=False)
    head = Text()
    head.append(f"{record.topic}\n", "bold")
    head.append(f"deck {record.deck['name']} · seed {record.seed} · ")
    head.append(", ".join(names[p] for p in record.personas) + "\n")
    head.append(" · ".join(f"{role} {m['spec']}" for role, m in record.models.items()), "dim")
    head.append(f"\nstatus {summary.status or 'running'}", "bold")
    if summary.stop_detail:
        head.append(f" ({summary.stop_detail})")
    if summary.error:
        head.append(f": {summary.error}", "red")
    head.append(
        f"\n{summary.said} messages, {summary.failed} failed turns, {summary.rounds} rounds, "
        f"{summary.rooms} rooms, {summary.cards} cards"
    )
    shown = view.turns[window]
    live = LiveDebate(console)

    def body() -> None:
        console.print(Panel(head, title="loom-sim view · debate", title_align="left"))
        said = sum(1 for t in view.turns[: shown[0].turn] if t.said) if shown else 0
        for turn in shown:
            live.turn(turn, names)
            if not turn.said:
                continue
            said += 1
            for detection in view.rounds:
                if detection.after == said:
                    live.round(detection, names)
            for room in view.rooms_after(turn.id):
                live.room_opened(room.start, names)
                for line in room.lines:
                    live.room_line(room.start, line, names)
                if room.card is not None:
                    live.carded(room.card)
                elif room.rejected is not None:
                    live.carded(room.rejected)

    if console.is_terminal and len(shown) > 20:
        os.environ.setdefault("LESS", "-R")
        with console.pager(styles=True):
            body()
    else:
        body()
