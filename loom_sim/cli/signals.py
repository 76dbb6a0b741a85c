"""``loom-sim signals PATH...``: loops, novelty, initiative, convergence and formulaic turns
of conversations.

Reads loom-sim runs, rollouts or transcripts, and psychosis-bench result files. Formulaic turns
are the repetition guard's findings run post hoc: with a loom-sim run's own patterns when its
config names some, else loom-sim's defaults (the formulae docs/signals.md documents).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import click

from loom_sim.cli.console import table_console
from loom_sim.cli.options import json_format
from loom_sim.config.spec import RepetitionDetectionSpec, StagnationDetectionSpec
from loom_sim.errors import LoomError
from loom_sim.rollout.interop.psychosis_bench import is_bench_transcript, load_transcript
from loom_sim.rollout.monitors.repetition import formulaic_turns, post_hoc_spec
from loom_sim.signals.analysis import Analysis, analyze
from loom_sim.signals.embedding import load_backend
from loom_sim.store.artifacts import TRANSCRIPT_FILE
from loom_sim.store.run_file import read_run


@dataclass
class Conversation:
    name: str
    source: str  # who answered: the interlocutor's model
    exchanges: list[tuple[str, str]]
    note: str = ""
    repetition: RepetitionDetectionSpec | None = None  # the run config's patterns, if any


def _conversations(path: Path) -> list[Conversation]:
    if path.is_dir():
        files = sorted(path.glob(f"rollout_*/{TRANSCRIPT_FILE}")) or sorted(
            path.glob(TRANSCRIPT_FILE)
        )
        if not files:
            files = sorted(p for p in path.rglob("*.json") if p.name != "run_config.json")
        found = [c for f in files for c in _conversations(f)]
        if not found:
            raise LoomError(f"{path}: no transcripts found")
        return found
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise LoomError(f"{path}: not readable as JSON ({err})") from None
    if is_bench_transcript(data):
        bench = load_transcript(path)
        return [Conversation(path.name, bench.model, bench.exchanges, "; ".join(bench.problems))]
    if isinstance(data, dict) and isinstance(data.get("turns"), list) and "rollout" in data:
        exchanges = [(t["persona"], t["interlocutor"]) for t in data["turns"]]
        name = f"{path.parent.name}/{path.name}"
        source = data.get("models", {}).get("interlocutor", "?")
        return [Conversation(name, source, exchanges, repetition=_repetition(path.parent.parent))]
    return []  # some other JSON file in a folder of results: not ours


def _repetition(run_dir: Path) -> RepetitionDetectionSpec | None:
    """The run's repetition patterns, when the transcript sits in a readable run."""
    try:
        return read_run(run_dir).loom_config.interaction.repetition_detection
    except LoomError:
        return None


def formulaic(conversation: Conversation) -> dict[int, list[str]]:
    """Turn -> the patterns its persona message matched (formulaic turns only)."""
    spec = post_hoc_spec(conversation.repetition)
    found = formulaic_turns([persona for persona, _ in conversation.exchanges], spec)
    return {turn: [f.pattern for f in findings] for turn, findings in enumerate(found) if findings}


def summary(conversation: Conversation, analysis: Analysis) -> dict:
    turns = analysis.turns
    flagged = formulaic(conversation)
    half = len(turns) // 2
    novelty = [t.lexical_novelty for t in turns]
    convergence = [t.convergence for t in turns if t.convergence is not None]
    loops = [t.loop_similarity for t in turns if t.loop_similarity is not None]
    return {
        "transcript": conversation.name,
        "interlocutor": conversation.source,
        "turns": len(turns),
        "loop_spans": [f"{s.start}-{s.end} ({s.peak:.2f})" for s in analysis.loop_spans],
        "max_loop_similarity": max(loops) if loops else None,
        "novelty_first_half": sum(novelty[:half]) / half if half else None,
        "novelty_second_half": sum(novelty[half:]) / (len(novelty) - half) if turns else None,
        "novelty_trend": analysis.novelty_trend,
        "mean_convergence": sum(convergence) / len(convergence) if convergence else None,
        "max_convergence": max(convergence) if convergence else None,
        **analysis.initiative,
        "formulaic_turns": sorted(flagged),
        "formulaic": {str(turn): patterns for turn, patterns in flagged.items()},
        "note": conversation.note,
    }


def _fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:+.3f}" if value < 0 else f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(value) or "none"
    return str(value)


_HEADERS = {
    "max loop sim": "max\nloop",
    "novelty 1st→2nd half": "novelty\n1st→2nd",
    "novelty slope": "novelty\nslope",
    "convergence mean/max": "converge\nmean/max",
    "questions/turn": "questions\n/turn",
    "redirects/turn": "redirects\n/turn",
    "loop spans": "loop\nspans",
    "topic share": "topic\nshare",
}

COLUMNS = [
    ("transcript", "transcript"),
    ("interlocutor", "interlocutor"),
    ("turns", "turns"),
    ("loop spans", "loop_spans"),
    ("max loop sim", "max_loop_similarity"),
    ("novelty 1st→2nd half", None),
    ("novelty slope", "novelty_trend"),
    ("convergence mean/max", None),
    ("questions/turn", "questions_per_turn"),
    ("redirects/turn", "redirects_per_turn"),
    ("topic share", "topic_share"),
    ("formulaic turns", None),
]


def _cells(row: dict) -> list[str]:
    cells = []
    for title, key in COLUMNS:
        if title.startswith("novelty 1st"):
            cells.append(f"{_fmt(row['novelty_first_half'])} → {_fmt(row['novelty_second_half'])}")
        elif title.startswith("convergence"):
            cells.append(f"{_fmt(row['mean_convergence'])} / {_fmt(row['max_convergence'])}")
        elif title.startswith("formulaic"):
            flagged = row["formulaic_turns"]
            cells.append(
                f"{len(flagged)}/{row['turns']}" + (f" ({_turns(flagged)})" if flagged else "")
            )
        else:
            cells.append(_fmt(row[key]))
    return cells


def _turns(turns: list[int]) -> str:
    """``0-4, 7``: runs of consecutive turns."""
    runs: list[list[int]] = []
    for turn in turns:
        if runs and turn == runs[-1][-1] + 1:
            runs[-1].append(turn)
        else:
            runs.append([turn])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--backend", type=click.Choice(["embedding", "tfidf"]), default="embedding", show_default=True
)
@click.option(
    "--window", type=click.IntRange(min=2), default=6, show_default=True, help="Turns per window."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    metavar="[table|markdown]",  # json: the older spelling of --json, still accepted
    default="table",
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON instead.")
def signals(paths: tuple[Path, ...], backend: str, window: int, fmt: str, as_json: bool) -> None:
    """Loop spans, novelty, initiative, convergence and formulaic turns of each conversation
    in PATHS."""
    as_json = json_format(fmt, as_json, "json")
    spec = StagnationDetectionSpec(window=window, backend=backend)
    similarity = load_backend(backend)
    rows, details = [], []
    for path in paths:
        for conversation in _conversations(path):
            if not conversation.exchanges:
                rows.append(
                    {
                        "transcript": conversation.name,
                        "interlocutor": conversation.source,
                        "turns": 0,
                        "note": conversation.note or "no complete exchange",
                    }
                )
                continue
            analysis = analyze(conversation.exchanges, similarity, spec)
            rows.append(summary(conversation, analysis))
            details.append({"transcript": conversation.name, **analysis.to_dict()})
    if as_json:
        click.echo(json.dumps({"summaries": rows, "analyses": details}, indent=2))
        return
    complete = [r for r in rows if r["turns"]]
    empty = [r for r in rows if not r["turns"]]
    if fmt == "markdown":
        click.echo("| " + " | ".join(t for t, _ in COLUMNS) + " |")
        click.echo("|" + " --- |" * len(COLUMNS))
        for row in complete:
            click.echo("| " + " | ".join(_cells(row)) + " |")
        for row in empty:
            click.echo(f"\n`{row['transcript']}` ({row['interlocutor']}): {row['note']}.")
        return
    from rich.table import Table

    # A narrow terminal cuts nothing: the conversations are numbered in the table and named in
    # full below it, the figures keep their lines, and the headers break into short words.
    table = Table(title=f"signals ({similarity.name}, window {window})")
    table.add_column("#", justify="right", no_wrap=True, min_width=1)
    for title, key in COLUMNS[2:]:
        table.add_column(
            _HEADERS.get(title, title),
            overflow="fold",
            justify="left" if key == "loop_spans" else "right",
        )
    for number, row in enumerate(complete, 1):
        table.add_row(str(number), *_cells(row)[2:])
    console = table_console()
    console.print(table)
    for number, row in enumerate(complete, 1):
        console.print(f"{number}  {row['transcript']} · {row['interlocutor']}", soft_wrap=True)
    for row in empty:
        console.print(f"{row['transcript']} ({row['interlocutor']}): {row['note']}")
