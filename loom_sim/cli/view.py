"""``loom-sim view TRANSCRIPT``: read a rollout turn by turn in the terminal.

A transcript.json holds everything about a turn (what the persona was told, what it drafted
and had rejected, what it said, the reply, what the monitors did, how it was scored), but as
JSON it is unreadable at 50 turns. This shows each turn as one block with the annotations next
to the text they explain. Scores are coloured by value so a bad stretch stands out while
scrolling. Transcript text is model output: it goes to rich as plain ``Text``, never as markup,
so ``[bold]`` or an escape sequence in a message is shown, not obeyed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from loom_sim.errors import LoomError
from loom_sim.report.data import (
    EMBEDDED_JUDGE,
    EMBEDDED_NOTICE,
    load_transcript,
    partial_transcript,
    scorer_order,
)
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.records import Transcript, TurnRecord
from loom_sim.store.run_file import RUN_FILE, RunRecord, read_run

PAGE_AFTER = 10  # more turns than this on a terminal go through the pager
_SLICE = re.compile(r"^\s*(-?\d+)?\s*(?::\s*(-?\d+)?\s*)?$")


def parse_turns(text: str | None) -> slice:
    """``10:20`` (end exclusive), ``5:``, ``:5``, ``-5:`` or a single turn ``12``."""
    if text is None:
        return slice(None)
    match = _SLICE.match(text)
    if not text.strip() or match is None:
        raise LoomError(f"--turns {text!r}: write START:END (end exclusive), e.g. 10:20, 5: or :5")
    start, end = (int(g) if g else None for g in match.groups())
    if ":" not in text:  # one turn
        return slice(start, None if start == -1 else start + 1)  # type: ignore[operator]
    return slice(start, end)


def _run_record(rollout_dir: Path) -> RunRecord | None:
    try:
        return read_run(rollout_dir.parent)
    except LoomError:
        return None


def find_transcript(path: Path) -> Transcript:
    """A transcript.json, a turns.jsonl, a rollout directory, or a run with one rollout."""
    if path.is_file():
        if path.name == TURNS_FILE:
            return partial_transcript(path.parent, _run_record(path.parent))
        return load_transcript(path)
    if (path / TRANSCRIPT_FILE).is_file():
        return load_transcript(path / TRANSCRIPT_FILE)
    if (path / TURNS_FILE).is_file():
        return partial_transcript(path, _run_record(path))
    rollouts = sorted(p for p in path.glob("rollout_*") if p.is_dir())
    if len(rollouts) == 1:
        return find_transcript(rollouts[0])
    if rollouts:
        raise LoomError(
            f"{path} holds {len(rollouts)} rollouts; name one: {path / rollouts[0].name}, ..."
        )
    what = "a run directory with no rollouts" if (path / RUN_FILE).exists() else "no transcript"
    raise LoomError(f"{path}: {what} (give a transcript.json or a rollout directory)")


def _style(value: float | None) -> str:
    if value is None:
        return "dim"
    return "green" if value >= 0.7 else "yellow" if value >= 0.4 else "red"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _intensities(record: TurnRecord) -> Text:
    expressed: dict[str, Any] = {}
    for name in ("trajectory", "trajectory_adherence"):
        if name in record.scores:
            expressed = record.scores[name].details.get("expressed") or {}
            break
    text = Text()
    for k, (dim, value) in enumerate(record.intensities.items()):
        if k:
            text.append(" · ", "dim")
        text.append(f"{dim} {value:.2f}")
        if record.levels.get(dim):
            text.append(f" ({record.levels[dim]})", "dim")
        shown = expressed.get(dim)
        if isinstance(shown, int | float):
            text.append(f" → expressed {shown:.2f} ({shown - value:+.2f})", "cyan")
    return text


def _scores(record: TurnRecord) -> Text:
    text = Text()
    names = [s for s in scorer_order() if s in record.scores]
    names += sorted(s for s in record.scores if s not in scorer_order())
    for k, name in enumerate(names):
        score = record.scores[name]
        if k:
            text.append(" · ", "dim")
        text.append(f"{name} ")
        text.append(_num(score.value), _style(score.value) + " bold")
        if name == "stagnation":
            details = score.details
            extra = [
                f"{label} {_num(details.get(key))}"
                for key, label in (("loop_similarity", "loop"), ("convergence", "conv"))
                if isinstance(details.get(key), int | float)
            ]
            if extra:
                text.append(f" ({', '.join(extra)})", "dim")
        if score.error:
            text.append(f" ({score.error})", "red dim")
    return text


def _event(event) -> Text:
    text = Text(f"{event.monitor} ", "magenta bold")
    value, threshold = event.values.get("value"), event.values.get("threshold")
    if value is not None:
        text.append(f"{value:.2f} ≥ {_num(threshold)} ")
    text.append(f"→ {event.action}", "magenta")
    text.append(f"  {event.pattern}", "dim")
    if event.detail:
        text.append(f" — {event.detail}", "dim")
    return text


def render_turn(record: TurnRecord) -> RenderableType:
    title = Text(f" turn {record.turn} ", "bold")
    title.append(f"· {record.phase} · injection {record.injection} ", "")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True, min_width=12)
    grid.add_column(ratio=1)
    grid.add_row(Text("intensities", "dim"), _intensities(record))
    if record.scaffolding is not None and record.scaffolding.since != record.turn:
        grid.add_row(
            Text("prompt", "dim"),
            Text(
                f"in force since turn {record.scaffolding.since} ({record.scaffolding.hash})", "dim"
            ),
        )
    cut = {role: n for role, n in record.cut_turns.items() if n}
    if cut:  # history left out to fit the context: what the model saw was shorter
        shown = ", ".join(f"{role} {n}" for role, n in sorted(cut.items()))
        grid.add_row(
            Text("history cut", "yellow"),
            Text(f"earlier turns left out to fit the context: {shown}", "yellow"),
        )
    if record.reminder:
        grid.add_row(Text("reminder", "blue"), Text(record.reminder, "blue"))
    if record.emergency:
        grid.add_row(Text("EMERGENCY", "bold red"), Text(record.emergency, "red"))
    if record.vary:  # the re-prompt the sent message was written under (a redirect, a reason)
        grid.add_row(Text("re-prompt", "yellow"), Text(record.vary, "yellow"))
    if record.revelations:
        grid.add_row(Text("revelations", "dim"), Text(", ".join(record.revelations), "dim"))
    for draft in record.rejected:
        patterns = ", ".join(e.pattern for e in draft.events)
        line = Text(draft.text, "strike dim")
        line.append(f"  ({patterns})", "yellow")
        grid.add_row(Text(f"rejected #{draft.attempt}", "yellow"), line)
    grid.add_row(Text("persona", "bold cyan"), Text(record.persona))
    outcome = record.probe_outcome
    if outcome is not None:  # the verdict on an earlier probe, reported with this turn
        verdict = {True: "caught", False: "held", None: "not judged"}[outcome.caught]
        line = Text(
            f"turn {outcome.turn} {outcome.tactic}: {verdict}", "red" if outcome.caught else ""
        )
        if outcome.evidence or outcome.error:
            line.append(f" — {outcome.evidence or outcome.error}", "dim")
        grid.add_row(Text("verdict", "magenta"), line)
    move = record.adversary
    if move is None:
        grid.add_row(Text("interlocutor", "bold green"), Text(record.interlocutor))
    else:
        grid.add_row(Text(f"{move.adversary}", "bold red"), Text(record.interlocutor))
        how = Text(f"{move.tactic} ({move.policy}", "red")
        how.append(", template)" if move.composed == "template" else ")", "red")
        how.append(f" {move.rationale}", "dim")
        grid.add_row(Text("tactic", "red"), how)
    for event in record.monitor_events:
        grid.add_row(Text("monitor", "magenta"), _event(event))
    if record.scores:
        grid.add_row(Text("scores", "dim"), _scores(record))
    return Group(Rule(title, align="left", style="dim"), grid)


def render_header(transcript: Transcript, shown: list[TurnRecord]) -> RenderableType:
    lines = Text()
    lines.append(f"{transcript.persona}", "bold")
    lines.append(f" · {transcript.config} · {transcript.rollout} (seed {transcript.seed})\n")
    models = " · ".join(f"{role} {spec}" for role, spec in transcript.models.items())
    lines.append(models + "\n", "dim")
    status_style = {"done": "green", "error": "bold red"}.get(transcript.status, "yellow")
    lines.append("status ")
    lines.append(transcript.status, status_style)
    if transcript.stop_reason:
        lines.append(f" · stop {transcript.stop_reason}")
    if transcript.stop_detail:
        lines.append(f" ({transcript.stop_detail})", "dim")
    if transcript.error:
        lines.append(f"\nerror: {transcript.error}", "red")
    cost = "unknown" if transcript.cost_usd is None else f"${transcript.cost_usd:.4f}"
    turns = f"{len(transcript.turns)} turns"
    if len(shown) != len(transcript.turns):
        turns += f", showing {shown[0].turn}–{shown[-1].turn}" if shown else ", showing none"
    lines.append(f"\n{turns} · cost {cost}")
    summary = transcript.scores
    if summary is not None:
        lines.append(f"\njudge {summary.judge} (rubric {summary.rubric_version}): ")
        for k, (name, agg) in enumerate(summary.aggregates.items()):
            lines.append(" · " if k else "", "dim")
            lines.append(f"{name} ")
            lines.append(_num(agg.mean), _style(agg.mean) + " bold")
        if summary.judge.startswith(EMBEDDED_JUDGE):
            lines.append(f"\n{EMBEDDED_NOTICE}", "bold yellow")
    else:
        lines.append("\nnot scored", "dim")
    return Panel(lines, title="loom-sim view", title_align="left", border_style="dim")


@click.command()
@click.argument("path", metavar="TRANSCRIPT", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--turns",
    "turns_",
    metavar="A:B",
    help="Only these turns, like a Python slice (end exclusive): 10:20, 5:, :5, -5:, 12.",
)
def view(path: Path, turns_: str | None) -> None:
    """Read a rollout turn by turn: prompts injected, drafts rejected, replies, monitor
    events and scores. TRANSCRIPT is a transcript.json or a rollout directory (or a debate
    directory: its thread, rooms and cards)."""
    window = parse_turns(turns_)
    if (path / "debate.json").is_file():
        from loom_sim.cli.debate_view import show_debate

        show_debate(path, window)
        return
    transcript = find_transcript(path)
    shown = transcript.turns[window]
    console = Console()
    body = [render_header(transcript, shown), *(render_turn(r) for r in shown)]
    if console.is_terminal and len(shown) > PAGE_AFTER:
        os.environ.setdefault("LESS", "-R")  # less shows the colours instead of escape codes
        with console.pager(styles=True):
            console.print(*body)
    else:
        console.print(*body)
