"""Matrix runs: several configs or targets, or a suite file, as one run directory of arms.

A matrix's arms are single runs, so this module only plans, runs and walks them: the rollout,
the scoring and the single-run report are the ones a single run uses. The command line and the
Python API both call it; neither prints here (``say`` does).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path

from loom_sim.api.say import Say, open_cache, say_headline
from loom_sim.api.scoring import score_matrix
from loom_sim.config.suite import is_suite, load_suite
from loom_sim.core import interrupt
from loom_sim.errors import LoomError
from loom_sim.executors import CellBatch, Executor
from loom_sim.executors.local import LocalExecutor
from loom_sim.models.retry import Faults
from loom_sim.resources import find
from loom_sim.rollout.runtime.matrix import (
    MatrixPlan,
    make_matrix_hub,
    matrix_cells,
    plan_matrix,
    plan_matrix_resume,
    write_matrix_plan,
)
from loom_sim.rollout.runtime.progress import PlainProgress, RichProgress
from loom_sim.rollout.runtime.run import RunOptions, unknown_prices
from loom_sim.store.artifacts import write_json
from loom_sim.store.matrix_file import read_matrix
from loom_sim.store.run_file import RUN_FILE


@dataclass(frozen=True)
class Outcome:
    """What a run left behind: its folder, whether it is a matrix, and (when rollouts ended in
    error) the sentence that says so and how to continue. The command line turns ``failure``
    into its exit status; the Python API keeps it on the returned run, so nothing completed is
    lost to an exception."""

    dir: Path
    matrix: bool
    rollouts: int
    failed: int
    failure: str | None = None


def wanted(paths: list[Path], targets: tuple[str, ...]) -> bool:
    """Whether these arguments ask for a matrix run rather than a single one."""
    return len(paths) > 1 or len(targets) > 1 or (len(paths) == 1 and is_suite(paths[0]))


def new_plan(
    paths: list[Path],
    targets: list[str],
    options: RunOptions,
    argv: list[str],
    given: Collection[str] = (),
) -> MatrixPlan:
    """The matrix these arguments name: configs × targets, or a suite file's (with the
    options named in ``given`` — set explicitly by the caller — winning over the file)."""
    if len(paths) == 1 and is_suite(paths[0]):
        suite_path = paths[0]
        suite = load_suite(suite_path)
        here = suite_path.parent
        configs = [
            here / entry if (here / entry).is_file() else find(entry, "examples", "ported")
            for entry in suite.configs
        ]
        roles = {**suite.models, **options.role_models}
        options = replace(
            options,
            turns=options.turns or suite.turns,
            rollouts=options.rollouts if "rollouts" in given else suite.rollouts,
            seed=options.seed if options.seed is not None else suite.seed,
            persona_model=options.persona_model or roles.pop("persona", None),
            judge_model=options.judge_model or roles.pop("judge", None),
            target_system=options.target_system or suite.target_system,
            concurrency=options.concurrency
            if "concurrency" in given or suite.concurrency is None
            else suite.concurrency,
            max_cost_usd=options.max_cost_usd
            if options.max_cost_usd is not None
            else suite.max_cost,
            max_runtime_s=options.max_runtime_s
            if options.max_runtime_s is not None
            else suite.max_runtime,
            role_models=roles,
        )
        chosen: list[str | None] = list(targets or suite.targets) or [None]
        return plan_matrix(
            configs,
            chosen,
            replace(options, target=None),
            argv,
            name=suite.suite or suite_path.stem,
            suite=suite_path,
        )
    return plan_matrix(paths, list(targets) or [None], replace(options, target=None), argv)


def resume_plan(run_dir: Path, concurrency: int | None, base_url: str | None) -> MatrixPlan:
    return plan_matrix_resume(run_dir, concurrency=concurrency, base_url=base_url)


def run_matrix(
    plan: MatrixPlan,
    no_score: bool,
    cache: bool,
    runner: Executor | None = None,
    claim: Callable[[Path], None] | None = None,
    *,
    say: Say,
) -> Outcome:
    """Run (or resume) every cell, then score and report every arm and the matrix (a
    shard's cells only, then score them; the report waits for ``merge``). ``claim`` takes a
    new matrix's folder (its lock) once its models are checked, before anything is written."""
    runner = runner or LocalExecutor()
    with open_cache(cache, say) as store:
        hub = make_matrix_hub(plan, store)
        if claim is not None:  # before any note: a run refused for its folder says one line
            claim(plan.dir)
        specs = {s for arm in plan.arms for s in arm.models.values()}
        for spec in unknown_prices(hub, {s: s for s in sorted(specs)}):
            say(
                f"note: {spec} has no known price: its cost is recorded as unknown "
                "(give --price SPEC=IN/OUT or the config's models.pricing to count it)",
                err=True,
            )
        write_matrix_plan(plan)
        record = plan.record
        say(
            f"run directory: {plan.dir} ({len(record.arms)} arms: "
            f"{len(record.configs)} configs x {len(record.targets)} targets, "
            f"{record.rollouts} rollouts each)",
            err=True,
        )
        cells = matrix_cells(plan)
        batch = CellBatch(
            cells,
            hub,
            record.budgets,
            record.concurrency,
            plan.dir,
            plan.arms[0].record.base_url,
            again=f"loom-sim run --resume {plan.dir}",
        )
        try:
            if sys.stderr.isatty():
                with RichProgress() as progress:
                    done = list(zip(cells, runner.run_cells(batch, progress), strict=True))
            else:
                done = list(zip(cells, runner.run_cells(batch, PlainProgress()), strict=True))
        except (interrupt.Interrupted, KeyboardInterrupt):
            raise interrupt.Interrupted(
                "interrupted: every completed turn is saved. "
                f"Continue with: loom-sim run --resume {plan.dir}"
            ) from None
        finally:
            record_matrix_faults(plan, hub.retry.faults)
        for cell, t in done:
            detail = t.stop_detail if t.status == "done" else t.error
            say(f"{cell.label}: {t.status}, {len(t.turns)} turns ({detail})")
        if not no_score and any(t.turns for _, t in done):
            say("scoring...", err=True)
            score_matrix(plan.dir, plan.record.concurrency, None, store, executor=runner, say=say)
            if record.shard is None:
                for path in report_matrix(plan.dir):
                    say(f"report: {path}")
                say_headline(plan.dir, say)
    say(f"results in {plan.dir}")
    if record.shard is not None:
        say(
            f"this folder holds shard {record.shard} of the matrix; when every shard has run, "
            "join them (and report) with: loom-sim merge SHARD_DIR... -o RUN_DIR",
            err=True,
        )
    failed = [t for _, t in done if t.status == "error"]
    failure = None
    if failed:
        failure = (
            f"{len(failed)} of {len(done)} cells ended in error; their completed turns are "
            f"kept. Continue them with: loom-sim run --resume {plan.dir}"
        )
    return Outcome(plan.dir, True, len(done), len(failed), failure)


def record_matrix_faults(plan: MatrixPlan, faults: Faults) -> None:
    """Add the cells' model-call faults to the matrix's run.json (a disk that refuses is not
    worth failing the run over)."""
    if faults.empty:
        return
    plan.record.add_faults(faults)
    with contextlib.suppress(LoomError):
        # An executor may have added its pass (``executions``) to the file meanwhile.
        plan.record.executions = read_matrix(plan.dir).executions
        write_json(plan.dir / RUN_FILE, plan.record)


def report_matrix(run_dir: Path, output: Path | None = None) -> list[Path]:
    """Every arm's report (in its folder), then the matrix's: one column per target."""
    from loom_sim.compare import write_matrix_report
    from loom_sim.rollout.report import write_report

    record = read_matrix(run_dir)
    paths: list[Path] = []
    if output is None:
        for arm in record.arms:
            arm_dir = run_dir / arm.key
            if any(arm_dir.glob("rollout_*/transcript.json")) or any(
                arm_dir.glob("rollout_*/turns.jsonl")
            ):
                write_report(arm_dir)
    paths += write_matrix_report(run_dir, output)
    return paths
