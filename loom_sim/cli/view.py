"""``loom-sim view TRANSCRIPT``: read a rollout turn by turn in the terminal.

A transcript.json holds everything about a turn (what the persona was told, what it drafted
and had rejected, what it said, the reply, what the monitors did, how it was scored), but as
JSON it is unreadable at 50 turns. This shows each turn as one block with the annotations next
to the text they explain: the model under evaluation's scores (DCS, HES, SIS, its markers, with
an imported file's reference scores beside them) on one line, the persona's on the next.
Scores are coloured by value so a bad stretch stands out while scrolling. Transcript text is
model output: it goes to rich as plain ``Text``, never as markup, so ``[bold]`` or an escape
sequence in a message is shown, not obeyed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from loom_sim.cli.console import safe_console
from loom_sim.errors import LoomError
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.report.data import (
    EMBEDDED_JUDGE,
    EMBEDDED_NOTICE,
    load_transcript,
    partial_transcript,
    persona_scorers,
    scorer_order,
)
from loom_sim.rollout.report.spiral import headline as spiral_headline
from loom_sim.rollout.report.target import is_target
from loom_sim.rollout.scoring.safety import SAFETY_SCORES
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.matrix_file import is_matrix, read_matrix
from loom_sim.store.records import Score, Transcript, TurnRecord
from loom_sim.store.run_file import RUN_FILE, RunRecord, read_run

PAGE_AFTER = 10  # more turns than this on a terminal go through the pager
_SLICE = re.compile(r"^\s*(-?\d+)?\s*(?::\s*(-?\d+)?\s*)?$")


def parse_turns(text: str | None) -> slice:
    """``10:20`` (turns 10 to 20 as shown: counted from 1, both included), ``5:``, ``:5``,
    ``-5:`` (the last five) or one turn ``12``; as a slice of the 0-based list."""
    if text is None:
        return slice(None)
    match = _SLICE.match(text)
    bad = LoomError(
        f"--turns {text!r}: write FIRST:LAST (turns counted from 1, both included), "
        "e.g. 10:20, 5: or :5"
    )
    if not text.strip() or match is None:
        raise bad
    first, last = (int(g) if g else None for g in match.groups())
    if first == 0 or last == 0 or (last is not None and last < 0):
        raise bad
    if ":" not in text:  # one turn
        assert first is not None
        if first < 0:
            return slice(first, None if first == -1 else first + 1)
        return slice(first - 1, first)
    start = first if first is None or first < 0 else first - 1
    return slice(start, last)


def _run_record(rollout_dir: Path) -> RunRecord | None:
    try:
        return read_run(rollout_dir.parent)
    except LoomError:
        return None


def _config_phases(path: Path) -> list[str] | None:
    """The phases of the run's config, from the run.json above ``path`` (None if none)."""
    start = path if path.is_dir() else path.parent
    for folder in (start, start.parent):
        if (folder / RUN_FILE).is_file():
            record = _run_record(folder / "rollout")
            if record is None:
                return None
            phases = record.config.get("trajectory", {}).get("phases", [])
            return [str(p["name"]) for p in phases if isinstance(p, dict) and p.get("name")]
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
    if is_matrix(path):
        first = read_matrix(path).cells()[0].id
        raise LoomError(f"{path} is a matrix run; name one of its cells: {path / first}, ...")
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


def _target_value(name: str, score: Score) -> tuple[str, str]:
    """A target score's text and style on its own scale: ``n/a`` and ``failed`` are states,
    not numbers."""
    if score.value is None:
        return ("n/a", "dim") if score.state == "not_applicable" else ("failed", "red")
    goodness = SCORERS.get(name).goodness(score.value) if name in SCORERS else None
    return f"{score.value:g}", _style(goodness) + " bold"


def _target_scores(record: TurnRecord) -> Text:
    """The model under evaluation's scores of this turn, with the reference's beside them."""
    text = Text()
    errors: list[str] = []
    names = [
        s for s in scorer_order() if is_target(s) and (s in record.scores or s in record.reference)
    ]
    for name in names:
        score = record.scores.get(name)
        if name == "markers" or (name == "dimensions" and (score is None or score.value is None)):
            continue
        if text:
            text.append(" · ", "dim")
        text.append(f"{name.upper() if len(name) == 3 else name} ")
        if score is not None:
            text.append(*_target_value(name, score))
            if score.error:
                errors.append(score.error)
        else:
            text.append("–", "dim")
        if name in record.reference:
            shown, _ = _target_value(name, record.reference[name])
            text.append(f" (ref {shown})", "dim")
    for error in dict.fromkeys(errors):  # one reason, however many scores it cost
        text.append(f" ({error})", "red dim")
    markers = record.scores.get("markers")
    if markers is not None and markers.value is not None:
        found = [*markers.details.get("patient", []), *markers.details.get("assistant", [])]
        if found:
            text.append(" · markers ", "dim")
            text.append(", ".join(m.replace("_", " ") for m in found), "magenta")
    return text


def _scores(record: TurnRecord) -> Text:
    text = Text()
    names = [s for s in scorer_order() if s in record.scores and not is_target(s)]
    names += sorted(s for s in persona_scorers(list(record.scores)) if s not in scorer_order())
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
    title = Text(f" turn {record.turn + 1} ", "bold")
    title.append(f"· {record.phase} · injection {record.injection} ", "")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True, min_width=12)
    grid.add_column(ratio=1)
    grid.add_row(Text("intensities", "dim"), _intensities(record))
    if record.scaffolding is not None and record.scaffolding.since != record.turn:
        grid.add_row(
            Text("prompt", "dim"),
            Text(
                f"in force since turn {record.scaffolding.since + 1} ({record.scaffolding.hash})",
                "dim",
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
            f"turn {outcome.turn + 1} {outcome.tactic}: {verdict}", "red" if outcome.caught else ""
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
    for role in ("persona", "interlocutor"):
        if record.cut_at_limit(role):  # the model stopped at its token limit, mid-reply
            grid.add_row(Text("cut", "red"), Text(f"{role}: cut at the token limit", "red"))
    for event in record.monitor_events:
        grid.add_row(Text("monitor", "magenta"), _event(event))
    target = _target_scores(record)
    if target:
        grid.add_row(Text("model scores", "bold green"), target)
    if any(not is_target(name) for name in record.scores):
        grid.add_row(Text("persona scores", "dim"), _scores(record))
    return Group(Rule(title, align="left", style="dim"), grid)


def render_header(
    transcript: Transcript, shown: list[TurnRecord], phases: list[str] | None = None
) -> RenderableType:
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
        turns += (
            f", showing {shown[0].turn + 1}–{shown[-1].turn + 1}" if shown else ", showing none"
        )
    lines.append(f"\n{turns} · cost {cost}")
    if phases:  # what happened: the phases reached, in order, and those never reached
        reached = list(dict.fromkeys(r.phase for r in transcript.turns))
        lines.append("\nphases " + " → ".join(reached or ["none"]))
        missed = [name for name in phases if name not in reached]
        if missed:
            lines.append(f" (not reached: {', '.join(missed)})", "dim")
    summary = transcript.scores
    if summary is not None:
        lines.append(f"\njudge {summary.judge} (rubric {summary.rubric_version}): ")
        persona = {k: v for k, v in summary.aggregates.items() if not is_target(k)}
        for k, (name, agg) in enumerate(persona.items()):
            lines.append(" · " if k else "", "dim")
            lines.append(f"{name} ")
            lines.append(_num(agg.mean), _style(agg.mean) + " bold")
        spiral = spiral_headline(transcript)
        if summary.target is not None and (
            spiral is None or any(n in summary.aggregates for n in SAFETY_SCORES)
        ):
            safety = summary.target.safety
            lines.append("\nmodel under evaluation: ")
            lines.append(
                f"DCS mean {_num(safety.avg_dcs)} (max {_num(safety.max_dcs, 0)}) · "
                f"HES mean {_num(safety.avg_hes)} (max {_num(safety.max_hes, 0)}) · "
                f"SIS {safety.total_sis} of {safety.sis_count}"
            )
        if spiral is not None:
            lines.append(f"\nmodel under evaluation: {spiral}")
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
    help="Only turns FIRST to LAST as numbered on screen (from 1, both included): 10:20, 5:, "
    ":5, -5: (the last five), 12.",
)
def view(path: Path, turns_: str | None) -> None:
    """Read a rollout turn by turn: prompts injected, drafts rejected, replies, monitor
    events and scores. TRANSCRIPT is a transcript.json or a rollout directory (or a harness
    session's folder: actions, replies, reflections and progress; or a debate directory: its
    thread, rooms and cards)."""
    from loom_sim.cli import harness_view

    window = parse_turns(turns_)
    if (path / "debate.json").is_file():
        from loom_sim.cli.debate_view import show_debate

        show_debate(path, window)
        return
    session = harness_view.find_session(path)  # a harness session reads differently
    if session is not None:
        body = harness_view.render(session, window)
    else:
        transcript = find_transcript(path)
        shown = transcript.turns[window]
        phases = _config_phases(path)
        body = [render_header(transcript, shown, phases), *(render_turn(r) for r in shown)]
    console = safe_console()
    if console.is_terminal and len(body) > PAGE_AFTER + 1:
        os.environ.setdefault("LESS", "-R")  # less shows the colours instead of escape codes
        with console.pager(styles=True):
            console.print(*body)
    else:
        console.print(*body)
