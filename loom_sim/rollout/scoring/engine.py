"""Scoring a run: every rollout's turns, post hoc, idempotent and resumable.

The engine schedules the rollouts (as many at once as the judge allows, :func:`schedule`); each
is scored by a :class:`~loom_sim.rollout.scoring.rollout.RolloutScorer`, which walks its turns:
every
enabled scorer of the registry (:data:`~loom_sim.plugins.scorers.SCORERS`) scores each turn it
has not scored yet (unless ``force``) — a sampled scorer only its seeded sample — and a scored
turn is written to ``transcript.json`` at once (atomically), so a killed ``score`` continues
where it stopped. A file is only rewritten when its content changes: scoring a scored run again
touches nothing.
"""

from __future__ import annotations

from pathlib import Path

import trio

from loom_sim.models.hub import ModelHub
from loom_sim.models.providers import PROVIDERS
from loom_sim.rollout.scoring.plan import (
    QA_MAX_TOKENS,
    SCORE_TRACE,
    Enabled,
    ScoreOptions,
    ScoreSummary,
    enabled_scorers,
    window_start,
)
from loom_sim.rollout.scoring.progress import NullScoreProgress, ScoreProgress
from loom_sim.rollout.scoring.rollout import RolloutScorer
from loom_sim.store.artifacts import RolloutFiles, rollout_dir
from loom_sim.store.run_file import RunRecord, read_run

__all__ = [
    "QA_MAX_TOKENS",
    "SCORE_TRACE",
    "Enabled",
    "RolloutScorer",
    "ScoreOptions",
    "ScoreSummary",
    "enabled_scorers",
    "schedule",
    "score_rollout",
    "score_run",
    "window_start",
]


async def score_run(
    run_dir: Path,
    hub: ModelHub,
    options: ScoreOptions,
    progress: ScoreProgress | None = None,
) -> ScoreSummary:
    record = read_run(run_dir)
    judge = options.judge_model or record.judge
    hub.check(judge)
    summary = ScoreSummary()
    rollouts, lanes = schedule(hub, judge, options.concurrency)
    limiter = trio.CapacityLimiter(rollouts)
    progress = progress or NullScoreProgress()
    scorers: list[RolloutScorer] = []
    for index in range(record.rollouts):  # every file read, and the work counted, up front
        files = RolloutFiles(rollout_dir(run_dir, index))
        transcript = files.transcript()
        if transcript is not None and transcript.turns:
            scorer = RolloutScorer(record, files, transcript, hub, judge, options, lanes=lanes)
            scorer.plan(progress)
            scorers.append(scorer)

    async def one(scorer: RolloutScorer) -> None:
        async with limiter:
            await scorer.run(summary, progress)

    async with trio.open_nursery() as nursery:
        for scorer in scorers:
            nursery.start_soon(one, scorer)
    return summary


async def score_rollout(
    run_dir: Path,
    index: int,
    hub: ModelHub,
    options: ScoreOptions,
    summary: ScoreSummary,
    record: RunRecord | None = None,
    progress: ScoreProgress | None = None,
) -> None:
    """Score one rollout of the run in ``run_dir`` into ``summary``: the unit of scoring work
    (a distributed executor hands these out one by one). A rollout not yet ended, or without
    turns, is left alone."""
    record = record if record is not None else read_run(run_dir)
    files = RolloutFiles(rollout_dir(run_dir, index))
    transcript = files.transcript()
    if transcript is None or not transcript.turns:
        return
    judge = options.judge_model or record.judge
    _, lanes = schedule(hub, judge, options.concurrency)
    scorer = RolloutScorer(record, files, transcript, hub, judge, options, lanes=lanes)
    if progress is not None:
        scorer.plan(progress)
    await scorer.run(summary, progress)


def schedule(hub: ModelHub, judge: str, concurrency: int) -> tuple[int, int]:
    """(rollouts scored at once, turns at once in each) for this judge.

    A judge run in-process one call at a time (llama.cpp) gets one rollout, turn by turn: its
    calls then come in the order that lets llama.cpp reuse the prompt it evaluated for the
    previous call (the same window of transcript, judged against each rubric in turn), where
    interleaving rollouts would make every call start from scratch. A judge behind a network
    gets up to ``concurrency`` rollouts, and the calls its provider allows beyond those go to
    turns within each: there, a call is mostly waiting. Other in-process judges (scripted)
    answer at once, and overlapping their turns would buy nothing."""
    provider = PROVIDERS.get(judge.split("/", 1)[0])
    if not provider.parallel:
        return 1, 1
    slots = max(1, hub.provider_concurrency.get(provider.name, provider.concurrency))
    rollouts = max(1, min(concurrency, slots))
    return rollouts, (max(1, slots // rollouts) if provider.http else 1)
