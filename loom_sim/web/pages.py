"""What each page of the viewer shows, as plain data for its template.

Pages read the disk afresh on every request (a run that is still going changes between two
requests) and never write. Every piece of transcript text is model output: templates
autoescape it, and nothing here marks any of it safe.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_sim.assembler import Assembler
from loom_sim.config import LoomConfig
from loom_sim.core.lock import holder
from loom_sim.errors import LoomError
from loom_sim.plugins.scorers import SCORERS
from loom_sim.rollout.report.data import load_transcript, partial_transcript
from loom_sim.runs.catalog import find_runs
from loom_sim.runs.load import RunResults, load_results
from loom_sim.runs.scores import SCORED, goodness, rollout_value, scorer_names, state
from loom_sim.store.artifacts import TRANSCRIPT_FILE, TURNS_FILE
from loom_sim.store.records import Score, Transcript, TurnRecord
from loom_sim.store.run_file import RunRecord, read_run
from loom_sim.web.display import entries
from loom_sim.web.live import token
from loom_sim.web.pairs import pair_links
from loom_sim.web.paths import Resolver

__all__ = ["compare_page", "load_rollout", "rollout_page", "run_page", "runs_page"]

# A page's size is bounded whatever a run holds: a long run shows its rollouts, and a long
# rollout its turns, a page at a time; a rollout whose files are larger than a page could
# ever show is not parsed at all (`loom-sim view` and `export` read it in full).
ROWS_PER_PAGE = 200
TURNS_PER_PAGE = 50
MAX_ROLLOUT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Pages:
    """Which slice of a long list a page shows (``page`` from 1)."""

    page: int
    count: int  # pages in all (at least 1)
    start: int  # index of the first item shown
    stop: int

    @classmethod
    def of(cls, total: int, per_page: int, page: int) -> Pages:
        count = max(1, -(-total // per_page))
        page = min(max(1, page), count)
        start = (page - 1) * per_page
        return cls(page, count, start, min(total, start + per_page))


@dataclass(frozen=True)
class Filters:
    config: str = ""
    target: str = ""
    status: str = ""

    def any(self) -> bool:
        return bool(self.config or self.target or self.status)


def grade(value: float | None) -> str:
    if value is None:
        return "none"
    if not 0.0 <= value <= 1.0:
        return ""
    return "good" if value >= 0.7 else "mid" if value >= 0.4 else "bad"


def runs_page(resolver: Resolver, filters: Filters) -> dict[str, Any]:
    runs = find_runs(
        resolver.root,
        config=filters.config or None,
        target=filters.target or None,
        status=filters.status or None,
    )
    return {"runs": runs, "filters": filters, "root": resolver.root}


# ─── a run ──────────────────────────────────────────────────────────────────


def _rollout_rows(
    results: RunResults, resolver: Resolver, pages: Pages
) -> tuple[list[str], list[dict]]:
    scorers = scorer_names(r.transcript for r in results.rollouts)
    pairs = pair_links(resolver, [results]) if results.kind == "matrix" else {}
    rows = []
    for r in results.rollouts[pages.start : pages.stop]:
        t = r.transcript
        values = {s: rollout_value(t, s) for s in scorers}
        grades = {s: grade(goodness(s, v)) for s, v in values.items()}
        rows.append(
            {
                "cell": r.cell.id,
                "config": r.config,
                "target": r.target,
                "status": t.status,
                "turns": len(t.turns),
                "planned": r.arm.record.turns,
                "stop": t.stop_detail if t.status == "done" else t.error or t.stop_detail,
                "cost": t.cost_usd,
                "values": values,
                "grades": grades,
                "href": resolver.rel(r.dir) if t.turns else None,
                "pairs": pairs.get(resolver.rel(r.dir), []),
            }
        )
    return scorers, rows


def run_page(resolver: Resolver, rel: str, page: int = 1) -> dict[str, Any]:
    run_dir = resolver.run_dir(rel)
    results = load_results(run_dir, within=resolver.root)
    pages = Pages.of(len(results.rollouts), ROWS_PER_PAGE, page)
    scorers, rows = _rollout_rows(results, resolver, pages)
    comparison = None
    if results.kind == "matrix" and any(r.transcript.turns for r in results.rollouts):
        from loom_sim.compare import build_compare
        from loom_sim.compare.html import compare_body

        comparison = compare_body(build_compare([results]))
    summary = {
        "turns": sum(len(r.transcript.turns) for r in results.rollouts),
        "planned": results.planned_turns,
        "done": sum(1 for r in results.rollouts if r.status == "done"),
        "cells": results.cells,
        "pending": results.pending,
    }
    status = (
        "complete"
        if summary["done"] == summary["cells"]
        else "failed"
        if any(r.status == "error" for r in results.rollouts)
        else "partial"
    )
    parent = _parent_run(resolver, run_dir)
    # the pid writing it now, if any (a matrix's arm is written under the matrix's lock)
    running = holder(run_dir) or (holder(run_dir.parent) if parent else None)
    if running and status != "complete":
        status = "running"  # still going: not failed, not waiting to be resumed
    arms = [
        {"key": a.key, "href": resolver.rel(a.dir), "config": a.record.config_name,
         "target": a.record.models.get("interlocutor", "?")}
        for a in results.arms
        if a.key
    ]  # fmt: skip
    has_turns = any(r.transcript.turns for r in results.rollouts)
    return {
        "rel": resolver.rel(run_dir),
        "results": results,
        "record": results.record,
        "models": results.arms[0].record.models if results.kind == "run" else {},
        "scorers": scorers,
        "rows": rows,
        "pages": pages,
        "arms": arms,
        "summary": summary,
        "status": status,
        "running": running,  # not resumable meanwhile
        "comparison": comparison,
        "faults": _faults(results),
        "report": has_turns and results.kind == "run",
        "since": token(run_dir),
        "parent": parent,
    }


def _faults(results: Any) -> Any:
    """Model calls retried and given up, replies asked again, budgets: the report's section,
    over every arm of a matrix."""
    from loom_sim.compare.headline import faults_of
    from loom_sim.rollout.report.faults import faults_html

    return faults_html(faults_of(results))


def _parent_run(resolver: Resolver, run_dir: Path) -> str | None:
    """The matrix an arm belongs to, for the breadcrumb."""
    parent = run_dir.parent
    if parent != resolver.root and (parent / "run.json").is_file():
        return resolver.rel(parent)
    return None


# ─── a rollout ──────────────────────────────────────────────────────────────


def _score(name: str, score: Score) -> dict[str, Any]:
    found = state(score)
    value = score.value if found == SCORED else None
    return {
        "name": name,
        "state": found,
        "value": value,
        "grade": grade(goodness(name, value)),
        "source": score.source,
        "error": score.error,
        "details": entries(score.details),
    }


def _scaffolding(assembler: Assembler | None, record: TurnRecord) -> str | None:
    """The prompt in force from this turn (full injections only): the persona's system prompt
    at its first, and at a later one what the update it was sent amounts to."""
    if assembler is None or record.injection != "full":
        return None
    try:
        plan = assembler.plan(record.turn, record.fired, prompt="injected")
    except (LoomError, ValueError, KeyError):
        return None
    return plan.prompt.render() if plan.prompt is not None else None


def turn_view(
    record: TurnRecord, order: list[str], assembler: Assembler | None, last_full: int | None
) -> dict[str, Any]:
    names = [s for s in order if s in record.scores]
    names += [s for s in record.scores if s not in names]
    return {
        "record": record,
        "scaffolding": _scaffolding(assembler, record),
        "last_full": last_full,
        "intensities": [
            (dim, value, record.levels.get(dim)) for dim, value in record.intensities.items()
        ],
        "scores": [_score(name, record.scores[name]) for name in names],
        "responder": record.adversary.adversary if record.adversary else "target",
        "tokens": sum(u.input_tokens + u.output_tokens for u in record.usage.values()),
    }


def _config(record: RunRecord) -> LoomConfig | None:
    """The run's config for showing its prompts. A run made with a plug-in scorer that is not
    installed here records that scorer's settings, which no longer validate: for reading, its
    section is set aside (the prompts do not depend on it)."""
    try:
        return record.loom_config
    except LoomError:
        pass
    data = copy.deepcopy(record.config)
    scoring = (data.get("evaluation") or {}).get("scoring")
    if isinstance(scoring, dict):
        known = {info.config_key for info in SCORERS}
        data["evaluation"]["scoring"] = {k: v for k, v in scoring.items() if k in known}
    try:
        return LoomConfig.model_validate(data)
    except ValueError:
        return None


def _too_large(folder: Path) -> None:
    for name in (TRANSCRIPT_FILE, TURNS_FILE):
        try:
            size = (folder / name).stat().st_size
        except OSError:
            continue
        if size > MAX_ROLLOUT_BYTES:
            raise LoomError(
                f"{folder.name}/{name} is {size / 2**20:.0f} MB, more than the viewer shows "
                f"({MAX_ROLLOUT_BYTES // 2**20} MB); read it with loom-sim view or loom-sim export"
            )


def load_rollout(resolver: Resolver, rel: str) -> tuple[Path, RunRecord | None, Transcript]:
    """A rollout's folder, its run's record (None if unreadable) and its transcript (scored,
    or as far as its turns have been written)."""
    folder = resolver.rollout_dir(rel)
    _too_large(folder)
    try:
        record: RunRecord | None = read_run(folder.parent)
    except LoomError:
        record = None
    transcript: Transcript = (
        load_transcript(folder / TRANSCRIPT_FILE)
        if (folder / TRANSCRIPT_FILE).is_file()
        else partial_transcript(folder, record)
    )
    return folder, record, transcript


def target_of(record: RunRecord | None, transcript: Transcript) -> str:
    return (record.models.get("interlocutor") if record else None) or transcript.models.get(
        "interlocutor", "?"
    )


def rollout_page(resolver: Resolver, rel: str, page: int = 1) -> dict[str, Any]:
    folder, record, transcript = load_rollout(resolver, rel)
    run_dir = folder.parent
    config = _config(record) if record is not None and not record.imported_from else None
    assembler = Assembler(config, record.turns) if config is not None and record else None
    order = scorer_names([transcript])
    pages = Pages.of(len(transcript.turns), TURNS_PER_PAGE, page)
    last_full = None
    for turn in transcript.turns[: pages.start]:  # the prompt in force when the page begins
        if turn.injection == "full":
            last_full = turn.turn
    turns = []
    for turn in transcript.turns[pages.start : pages.stop]:
        if turn.injection == "full":
            last_full = turn.turn
        turns.append(turn_view(turn, order, assembler, last_full))
    target = target_of(record, transcript)
    return {
        "rel": resolver.rel(folder),
        "run_rel": resolver.rel(run_dir),
        "matrix_rel": _parent_run(resolver, run_dir),
        "transcript": transcript,
        "record": record,
        "target": target,
        "turns": turns,
        "total_turns": len(transcript.turns),
        "pages": pages,
        "scorers": order,
        "aggregates": {s: rollout_value(transcript, s) for s in order},
        "grades": {s: grade(goodness(s, rollout_value(transcript, s))) for s in order},
        "live": transcript.status == "incomplete",
        "since": token(run_dir),
    }


def compare_page(resolver: Resolver, rels: list[str], rates: list[str]) -> dict[str, Any]:
    from loom_sim.compare import build_compare, parse_rate
    from loom_sim.compare.html import compare_body

    dirs = [resolver.run_dir(rel) for rel in rels]
    results = [load_results(d, within=resolver.root) for d in dirs]
    data = build_compare(results, [parse_rate(r) for r in rates if r.strip()])
    links = pair_links(resolver, results)
    pairs: dict[str, dict[str, str]] = {}  # one link per pair, in the runs' order
    for found in links.values():
        for link in found:
            pairs.setdefault(link["href"], link)
    return {
        "body": compare_body(data),
        "pairs": list(pairs.values()),
        # runs a process is writing now: their numbers are still moving
        "running": [resolver.rel(d) for d in dirs if holder(d) is not None],
        "runs": [resolver.rel(d) for d in dirs],
        "rates": rates,
    }
