"""``loom-sim view`` on a harness session: each turn as the user typed it, what came back, what
the simulated user made of it, and where the goal stood.

Text from the user model and the target goes to rich as plain ``Text``, never as markup, so a
``[bold]`` or an escape sequence in a reply is shown, not obeyed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from loom_sim.errors import LoomError
from loom_sim.harness.bundle import Bundle
from loom_sim.harness.plan import HARNESS_FILE
from loom_sim.harness.records import SESSION_FILE, SUMMARY_FILE, HarnessTurn
from loom_sim.harness.session_file import given, read_session


def find_session(path: Path) -> Path | None:
    """The session bundle ``path`` names (a bundle, or a harness run with one session), or
    None when ``path`` is not a harness run at all."""
    if path.is_file():
        path = path.parent
    if (path / SESSION_FILE).is_file():
        return path
    if (path / HARNESS_FILE).is_file():
        sessions = sorted(p for p in path.iterdir() if (p / SESSION_FILE).is_file())
        if len(sessions) == 1:
            return sessions[0]
        if not sessions:
            raise LoomError(f"{path}: a harness run with no session started yet")
        names = ", ".join(str(p) for p in sessions[:3]) + (", ..." if len(sessions) > 3 else "")
        raise LoomError(f"{path} holds {len(sessions)} sessions; name one: {names}")
    return None


def _load(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def header(folder: Path, turns: list[HarnessTurn]) -> RenderableType:
    session, summary = read_session(folder / SESSION_FILE), _load(folder / SUMMARY_FILE)
    scenario = session.scenario if session is not None else {}
    lines = Text()
    lines.append(f"{scenario.get('id', folder.name)}", "bold")
    lines.append(f" · {session.persona_id if session else '?'} · {folder.name}")
    lines.append(f" (seed {session.seeds.session if session else '?'})\n")
    models = " · ".join(f"{r} {s}" for r, s in (session.models if session else {}).items())
    lines.append(f"target {session.target.name if session else '?'} · {models}\n", "dim")
    lines.append(f"goal: {scenario.get('goal', '')}\n")
    status = session.status if session is not None else "running"
    lines.append("status ")
    lines.append(status, {"done": "green", "error": "bold red"}.get(status, "yellow"))
    stop_reason, stop_detail, error = (
        (given(session.stop_reason), given(session.stop_detail), given(session.error))
        if session is not None
        else (None, None, None)
    )
    if stop_reason:
        lines.append(f" · stop {stop_reason}")
    if stop_detail:
        lines.append(f" ({stop_detail})", "dim")
    if error:
        lines.append(f"\nerror: {error}", "red")
    lines.append(f"\n{len(turns)} turns")
    if summary:
        lines.append(f" · score {summary['score']:.2f} · ")
        passed = summary["passed"]
        lines.append("passed" if passed else "not passed", "green" if passed else "red")
        parts = " · ".join(f"{k} {v:.2f}" for k, v in summary["components"].items())
        lines.append(f"\n{parts}", "dim")
    return Panel(lines, title="loom-sim view (harness)", title_align="left", border_style="dim")


def render_turn(turn: HarnessTurn) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True, min_width=11)
    grid.add_column(ratio=1)
    for draft in turn.rejected:
        line = Text(draft.text, "strike dim")
        line.append("  (" + ", ".join(f.kind for f in draft.flags) + ")", "yellow")
        grid.add_row(Text("redrafted", "yellow"), line)
    said = Text(turn.action.text)
    for flag in turn.audit:
        said.append(f"  [{flag.kind}: {flag.detail}]", "yellow")
    who = "user" if turn.action.kind == "utterance" else "command"
    grid.add_row(Text(who, "bold cyan"), said)
    reply = Text(turn.reply.text or "(no output)")
    reply.append(f"  ({turn.reply.ended_by}, {turn.reply.duration_s:.1f} s)", "dim")
    grid.add_row(Text("target", "bold green"), reply)
    if turn.reply.continuation is not None:
        how = f"; reset with {turn.reply.reset!r}" if turn.reply.reset else ""
        waiting = f"stopped at its continuation prompt {turn.reply.continuation!r}{how}"
        grid.add_row(Text("waiting", "yellow"), Text(waiting, "yellow"))
    if turn.failed:
        grid.add_row(Text("failed", "bold red"), Text(turn.failure or "", "red"))
    if turn.action.kind == "command":
        shown = turn.ability_evidence or "none: the ability is not credited"
        grid.add_row(Text("evidence", "dim"), Text(shown, "dim"))
    for artifact in turn.artifacts:
        quality = f" quality {artifact.quality:.2f}" if artifact.quality is not None else ""
        grid.add_row(Text("file", "magenta"), Text(f"{artifact.path}{quality}"))
    r = turn.reflection
    ponder = Text()
    if r.what_worked:
        ponder.append(f"worked: {r.what_worked}\n")
    if r.what_failed:
        ponder.append(f"failed: {r.what_failed}\n")
    for question in r.open_questions:
        ponder.append(f"? {question}\n")
    ponder.append(f"next: {r.next_hypothesis} (confidence {r.confidence:.2f})")
    if turn.reflection_status != "valid":
        status = turn.reflection_status
        ponder.append(f"  [{status}]", "yellow" if status == "repaired" else "red")
    grid.add_row(Text("reflection", "blue"), ponder)
    marks = {True: "✓", False: "✗", None: "?"}
    met = ", ".join(f"{c.id} {marks[c.met]}" for c in turn.evaluation.results)
    grid.add_row(Text("progress", "dim"), Text(f"{turn.evaluation.progress:.2f}  {met}", "dim"))
    title = Text(f" turn {turn.turn} ", "bold")
    return Group(Rule(title, align="left", style="dim"), grid)


def render(folder: Path, window: slice) -> list[RenderableType]:
    turns = Bundle(folder).turns.load()
    return [header(folder, turns), *(render_turn(t) for t in turns[window])]
