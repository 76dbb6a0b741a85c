"""run → score → report: the whole of a run, as one function that the ``run`` command and the
Python API both call.

The command line parses its options into a :class:`RunRequest` and prints through ``say``;
the API builds the same request from keyword arguments. Keeping the pipeline here, not in the
click command, is what makes the two behave the same: the same planning, the same folder
locking, the same notes, the same scoring and report.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from loom_sim.api.matrix import Outcome, new_plan, resume_plan, run_matrix, wanted
from loom_sim.api.say import Say, open_cache, say_headline
from loom_sim.api.scoring import score_directory
from loom_sim.core import interrupt
from loom_sim.core.lock import hold
from loom_sim.errors import LoomError
from loom_sim.executors import CellBatch
from loom_sim.resources import find
from loom_sim.rollout.runtime.cells import plan_cells
from loom_sim.rollout.runtime.progress import PlainProgress, RichProgress
from loom_sim.rollout.runtime.run import (
    RunOptions,
    RunPlan,
    check_new,
    make_hub,
    plan_resume,
    plan_run,
    reach_note,
    record_faults,
    unknown_prices,
    write_plan,
)
from loom_sim.rollout.runtime.shards import shard_matrix, shard_run
from loom_sim.store.distribution import Shard, parse_shard
from loom_sim.store.jsonl import WriteFailed
from loom_sim.store.matrix_file import is_matrix

if TYPE_CHECKING:
    from loom_sim.executors import Executor
    from loom_sim.models.hub import ModelHub
    from loom_sim.models.retry import Faults
    from loom_sim.store.records import Transcript


@dataclass(frozen=True)
class RunRequest:
    """One run asked for: a new one (``configs``, shipped names or paths, with ``targets``),
    or the continuation of ``resume``. Several configs or targets, or a suite file, make a
    matrix. ``given`` names the options the caller set explicitly: a suite file's values
    yield to them."""

    configs: tuple[str | Path, ...] = ()
    targets: tuple[str, ...] = ()
    options: RunOptions = field(default_factory=RunOptions)
    score: bool = True
    cache: bool = True
    resume: Path | None = None
    concurrency: int | None = None  # a resume's override
    base_url: str | None = None  # a resume's (never stored with credentials)
    shard: str | None = None
    argv: tuple[str, ...] = ()
    given: Collection[str] = ()


def run_pipeline(
    request: RunRequest,
    runner: Executor,
    *,
    say: Say,
    again: Callable[[Path], str],
) -> Outcome:
    """Plan (or resume), run every rollout, score and report; ``again(folder)`` is the
    command that continues this run, said when it is interrupted or fails. Each folder is
    held (one writer) until this returns, scoring included."""
    with contextlib.ExitStack() as stack:

        def claim(folder: Path) -> None:
            """Takes a new run's folder once everything that can refuse the run has been
            checked and before anything is written: its lock, then a second look that no
            run was started there meanwhile."""
            stack.enter_context(hold(folder))
            check_new(folder)

        return _pipeline(request, runner, say, again, stack, claim)


def _pipeline(
    request: RunRequest,
    runner: Executor,
    say: Say,
    again_for: Callable[[Path], str],
    stack: contextlib.ExitStack,
    claim: Callable[[Path], None],
) -> Outcome:
    options = request.options
    shard = parse_shard(request.shard) if request.shard else None
    argv = list(request.argv)
    if request.resume is not None:
        stack.enter_context(hold(request.resume))
        if is_matrix(request.resume):
            mplan = resume_plan(request.resume, request.concurrency, request.base_url)
            return run_matrix(mplan, not request.score, request.cache, runner, say=say)
        plan = plan_resume(
            request.resume, concurrency=request.concurrency, base_url=request.base_url
        )
    else:
        if not request.configs:
            raise LoomError("give a CONFIG file to run, or --resume RUN_DIR")
        paths = [find(p, "examples", "ported") for p in request.configs]
        if shard is not None:
            _check_seeded(paths, options)
        if wanted(paths, request.targets):
            mplan = new_plan(paths, list(request.targets), options, argv, request.given)
            if shard is not None:
                shard_matrix(mplan, shard, rename=options.output is None)
            return run_matrix(mplan, not request.score, request.cache, runner, claim=claim, say=say)
        plan = plan_run(paths[0], options, argv=argv)
        if shard is not None:
            shard_run(plan, shard, rename=options.output is None)
    again = again_for(plan.dir)
    store = stack.enter_context(open_cache(request.cache, say))
    hub = make_hub(plan, store)
    if request.resume is None:  # before any note: a run refused for its folder says one line
        claim(plan.dir)
    for spec in unknown_prices(hub, plan.models):
        say(
            f"note: {spec} has no known price: its cost is recorded as unknown "
            "(give --price SPEC=IN/OUT or the config's models.pricing to count it)",
            err=True,
        )
    if request.resume is None:
        note = reach_note(plan.config, plan.record.turns)
        if note:
            say(f"note: {note}", err=True)
    write_plan(plan)
    say(f"run directory: {plan.dir}", err=True)
    batch = CellBatch(
        plan_cells(plan),
        hub,
        plan.record.budgets,
        plan.concurrency,
        plan.dir,
        plan.base_url,
        again=again,
    )
    live = sys.stderr.isatty()
    transcripts = _rollouts(plan, hub, runner, batch, again, live)
    failed = [t for t in transcripts if t.status == "error"]
    _closing_summary(transcripts, hub.retry.faults, say, tabled=live and sys.stdout.isatty())
    if request.score and any(t.turns for t in transcripts):
        from loom_sim.models.local import release_slots
        from loom_sim.rollout.scoring.engine import ScoreOptions
        from loom_sim.rollout.scoring.rollout import SCORING_ROLES

        # The rollouts are over: the in-process contexts of the roles scoring does not call
        # (the model under evaluation's) go, so scoring's slots do not come on top of them.
        release_slots(keep=SCORING_ROLES)

        try:
            summary = score_directory(
                plan.dir,
                ScoreOptions(concurrency=plan.concurrency),
                plan.base_url,
                plan.timeout_s,
                store,
                runner,
                again=again,
            )
        except* WriteFailed as full:  # a full disk while scoring: the rollouts are safe
            first: BaseException = full.exceptions[0]
            while isinstance(first, BaseExceptionGroup):  # nurseries nest it
                first = first.exceptions[0]
            raise LoomError(
                f"{first}; every turn and every score written so far is kept. "
                f"Free the space, then continue with: {again}"
            ) from None
        say(
            f"scored {summary.scored_turns} turns "
            f"({summary.failures} scores the judge could not give)"
        )
        if plan.record.shard is None:
            _report(plan.dir, say)
            say_headline(plan.dir, say)
    if plan.record.shard is not None:
        _merge_hint(plan.dir, plan.record.shard, say)
    say(f"results in {plan.dir}")
    failure = None
    if failed:
        failure = (
            f"{len(failed)} of {len(transcripts)} rollouts ended in error; their completed "
            f"turns are kept. Continue them with: {again}"
        )
    return Outcome(plan.dir, False, len(transcripts), len(failed), failure)


def _rollouts(
    plan: RunPlan, hub: ModelHub, runner: Executor, batch: CellBatch, again: str, live: bool
) -> list[Transcript]:
    """Every rollout of the plan, where ``runner`` runs them, with progress on screen; Ctrl-C
    stops them cleanly (what is saved and the command that continues are said), a second
    Ctrl-C at once."""
    progress = RichProgress() if live else PlainProgress()
    try:
        with progress if isinstance(progress, RichProgress) else contextlib.nullcontext():
            try:
                return runner.run_cells(batch, progress)
            except interrupt.Interrupted:
                progress.interrupted()
                raise
    except (interrupt.Interrupted, KeyboardInterrupt):  # a cluster's runner: KeyboardInterrupt
        raise interrupt.Interrupted(
            f"interrupted: {saved_turns(plan)} saved in {plan.dir}. Continue with: {again}"
        ) from None
    finally:
        record_faults(plan, hub.retry.faults)


def saved_turns(plan: RunPlan) -> str:
    """``"14 completed turns of 2 rollouts are"``, counted on disk."""
    turns = 0
    for index in range(plan.record.rollouts):
        try:
            turns += len(plan.rollout_spec(index).files.turns.read())
        except LoomError:
            continue
    rollouts = plan.record.rollouts
    noun = "turn" if turns == 1 else "turns"
    of = f" of {rollouts} rollout{'s' if rollouts != 1 else ''}"
    return f"{turns} completed {noun}{of} {'is' if turns == 1 else 'are'}"


def _closing_summary(
    transcripts: list[Transcript], faults: Faults, say: Say, *, tabled: bool
) -> None:
    """Each rollout's outcome (unless the live table on this terminal showed it already), and
    the model-call faults of the session."""
    if tabled:
        turns = sum(len(t.turns) for t in transcripts)
        errors = sum(t.status == "error" for t in transcripts)
        say(
            f"{len(transcripts)} rollout{'s' if len(transcripts) != 1 else ''}, {turns} turns"
            + (f", {errors} in error" if errors else "")
        )
    else:
        for t in transcripts:
            detail = t.error if t.status == "error" else None
            if t.status == "done" and t.stop_reason not in (None, "max_turns"):
                detail = t.stop_detail
            say(
                f"{t.rollout}: {t.status}, {len(t.turns)} turns"
                + (f" ({detail})" if detail else "")
            )
    redone = sum(r.failed_attempts for t in transcripts for r in t.turns)
    said = faults.summary() or "no model call retried"
    if redone:
        said += f"; {redone} unusable repl{'ies' if redone != 1 else 'y'} asked again"
    say(f"faults: {said}")


def _check_seeded(paths: list[Path], options: RunOptions) -> None:
    """Shards are merged only if they planned the same run: the run's --seed must be fixed."""
    from loom_sim.config.suite import is_suite, load_suite

    if options.seed is not None:
        return
    if len(paths) == 1 and is_suite(paths[0]) and load_suite(paths[0]).seed is not None:
        return
    raise LoomError(
        "--shard needs --seed N (the same on every shard): shards are joined only if they "
        "planned the same run"
    )


def _merge_hint(run_dir: Path, shard: Shard, say: Say) -> None:
    say(
        f"this folder holds shard {shard} of the run; when every shard has run, join them "
        f"(and report) with: loom-sim merge SHARD_DIR... -o RUN_DIR",
        err=True,
    )


def _report(run_dir: Path, say: Say) -> None:
    from loom_sim.rollout.report import write_report

    for path in write_report(run_dir):
        say(f"report: {path}")
