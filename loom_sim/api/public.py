"""loom-sim from Python: :func:`run`, :func:`score`, :func:`load`, :func:`compare_runs`.

The command line and these functions call the same pipeline (:mod:`loom_sim.api.pipeline`):
a run made here is the run ``loom-sim run`` makes, folder, records and report alike.

**Event loops.** loom-sim runs on trio, and ``trio.run`` cannot start inside another running
event loop — Jupyter's cells run inside asyncio's. So when :func:`run` or :func:`score` find
a loop running in the calling thread, they do their work in a fresh worker thread (with its
own ``trio.run``) and wait for it; in plain Python they run in the calling thread, where a
first Ctrl-C stops the rollouts cleanly as on the command line. Inside ``async`` code prefer
:func:`run_async` / :func:`score_async`: they hand the same work to a worker thread and
*await* it, so the loop keeps serving other tasks meanwhile. (Inspect AI's ``eval()`` faces
the same problem in notebooks; a worker thread keeps loom-sim's trio code untouched and needs
no patched event loop.) In a worker thread Ctrl-C cannot reach the rollouts: interrupting the
kernel stops the wait, not the run, which finishes in the background.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from loom_sim.api.pipeline import RunRequest, run_pipeline
from loom_sim.api.results import Run, load_run
from loom_sim.api.say import Say, open_cache, printed, silent
from loom_sim.errors import LoomError
from loom_sim.executors import Executor
from loom_sim.executors.local import LocalExecutor
from loom_sim.rollout.runtime.run import DEFAULT_CONCURRENCY, RunOptions

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")

ConfigArg = str | Path | Sequence[str | Path]


def run(
    config: ConfigArg | None = None,
    *,
    target: str | Sequence[str] | None = None,
    persona_model: str | None = None,
    judge_model: str | None = None,
    models: Mapping[str, str] | None = None,
    rollouts: int | None = None,
    turns: int | None = None,
    seed: int | None = None,
    output: str | Path | None = None,
    score: bool = True,
    target_system: str | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    max_cost: float | None = None,
    max_runtime: float | None = None,
    cache: bool = True,
    resume: str | Path | None = None,
    quiet: bool = False,
    executor: Executor | None = None,
) -> Run:
    """Run rollouts of a persona against the model under evaluation, score them and write the
    report — ``loom-sim run`` from Python — and return the run, loaded.

    ``config`` is a shipped config's name (``"mania_patient"``) or a path, or a list of them;
    ``target`` is one model spec or a list. Several configs or targets (or a suite file) make
    a matrix run of every config × target in one folder, whose :meth:`Run.compare` and
    :meth:`Run.differences` hold the comparison. The model roles: ``target`` (the model under
    evaluation), ``persona_model`` (plays the persona), ``judge_model`` (judges and scores),
    and ``models`` for any other role (``{"adversary": "openai/x"}``). Left out, each comes
    from the config, else the embedded default model. ``turns`` defaults to the config's
    expected turns, ``rollouts`` to 1, ``seed`` to a random one (recorded), ``output`` to
    ``results/<config>-<hash>-<time>``. ``score=False`` skips scoring and the report (score
    later with :func:`score`). ``resume`` continues an interrupted run from its folder, with
    the settings in its ``run.json`` (give nothing else but ``concurrency``/``base_url``).
    ``quiet`` keeps the run's lines off stdout/stderr (progress lines still go to stderr).

    Rollouts that end in error do not raise: their completed turns are kept, and the
    returned run's ``failure`` says so. Bad input raises :class:`loom_sim.errors.LoomError`
    with one sentence saying what and where.
    """
    request = _request(
        config,
        target,
        persona_model,
        judge_model,
        models,
        rollouts,
        turns,
        seed,
        output,
        score,
        target_system,
        base_url,
        concurrency,
        timeout,
        max_cost,
        max_runtime,
        cache,
        resume,
    )
    return _blocking(lambda: _run(request, quiet, executor))


async def run_async(config: ConfigArg | None = None, **settings: object) -> Run:
    """:func:`run`, awaited: the work goes to a worker thread, so the event loop (asyncio or
    trio) keeps serving its other tasks while the rollouts run. Takes :func:`run`'s
    arguments."""
    return await _in_thread(lambda: run(config, **settings))  # type: ignore[arg-type]


def score(
    run_dir: str | Path,
    *,
    judge_model: str | None = None,
    judge_window: int | None = None,
    force: bool = False,
    base_url: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = 120.0,
    cache: bool = True,
    quiet: bool = False,
    executor: Executor | None = None,
) -> Run:
    """Score every turn of an existing run folder (a single run or every arm of a matrix) —
    ``loom-sim score`` from Python — and return the run, loaded. Turns already scored are
    skipped unless ``force``: scoring is resumable and re-scoring costs nothing. The report
    is not rewritten here (``loom-sim report RUN_DIR`` does that)."""
    return _blocking(
        lambda: _score(
            Path(run_dir),
            judge_model,
            judge_window,
            force,
            base_url,
            concurrency,
            timeout,
            cache,
            silent if quiet else printed,
            executor,
        )
    )


async def score_async(run_dir: str | Path, **settings: object) -> Run:
    """:func:`score`, awaited (the work in a worker thread, as :func:`run_async`)."""
    return await _in_thread(lambda: score(run_dir, **settings))  # type: ignore[arg-type]


def load(run_dir: str | Path) -> Run:
    """The run in ``run_dir`` as a :class:`Run`: its transcripts, and its turns, rollouts
    and comparison as data frames. Reading never writes, so a run still going can be loaded
    (its rollouts in progress show as ``incomplete``)."""
    return load_run(run_dir)


def compare_runs(*runs: str | Path | Run) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``loom-sim compare`` on several runs as two data frames: the table (per config,
    target and scorer, the mean over rollouts and its 95% interval) and the differences
    between targets (paired when rollouts share config and seed). Not named ``compare``:
    ``loom_sim.compare`` is the package that draws the comparison, and would shadow it."""
    from loom_sim.api import frames
    from loom_sim.compare.data import build_compare

    results = [(r if isinstance(r, Run) else load_run(r)).results for r in runs]
    data = build_compare(results)
    return frames.compare_frame(data), frames.differences_frame(data)


# ─── how the work is done ───────────────────────────────────────────────────


def _run(request: RunRequest, quiet: bool, executor: Executor | None) -> Run:
    say: Say = silent if quiet else printed
    outcome = run_pipeline(
        request,
        executor or LocalExecutor(),
        say=say,
        again=lambda folder: f"loom-sim run --resume {folder}",
    )
    return Run(outcome.dir, load_run(outcome.dir).results, outcome.failure)


def _score(
    run_dir: Path,
    judge_model: str | None,
    judge_window: int | None,
    force: bool,
    base_url: str | None,
    concurrency: int,
    timeout: float,
    cache: bool,
    say: Say,
    executor: Executor | None,
) -> Run:
    from loom_sim.api.scoring import score_directory, score_matrix
    from loom_sim.core.lock import hold
    from loom_sim.rollout.scoring.engine import ScoreOptions
    from loom_sim.store.matrix_file import is_matrix

    if not run_dir.is_dir():
        raise LoomError(f"{run_dir}: not a directory (give a run directory)")
    runner = executor or LocalExecutor()
    with hold(run_dir), open_cache(cache, say) as store:  # one writer per folder
        if is_matrix(run_dir):
            score_matrix(
                run_dir,
                concurrency,
                base_url,
                store,
                say=say,
                judge_model=judge_model,
                judge_window=judge_window,
                force=force,
                timeout_s=timeout,
                executor=runner,
            )
        else:
            options = ScoreOptions(judge_model, judge_window, force, concurrency)
            summary = score_directory(run_dir, options, base_url, timeout, store, runner)
            say(
                f"scored {summary.scored_turns} turns in {summary.rollouts} rollouts "
                f"({summary.skipped_turns} already scored, "
                f"{summary.failures} scores the judge could not give)"
            )
    return load_run(run_dir)


def _loop_running() -> bool:
    """Whether an event loop runs in this thread (a notebook's asyncio, or trio)."""
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    import trio

    try:
        trio.lowlevel.current_trio_token()
        return True
    except RuntimeError:
        return False


def _blocking(work: Callable[[], T]) -> T:
    """``work()`` here, or — when a loop runs in this thread — in a worker thread, waited
    for; its exception (a LoomError, an interruption) is raised here either way."""
    if not _loop_running():
        return work()
    found: list[T] = []
    failed: list[BaseException] = []

    def worker() -> None:
        try:
            found.append(work())
        except BaseException as error:  # handed to the caller's thread, raised there
            failed.append(error)

    thread = threading.Thread(target=worker, name="loom-sim run", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return found[0]


async def _in_thread(work: Callable[[], T]) -> T:
    """Await ``work()`` run in a worker thread, under whichever loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        import trio

        return await trio.to_thread.run_sync(work)
    return await asyncio.to_thread(work)


def _request(
    config: ConfigArg | None,
    target: str | Sequence[str] | None,
    persona_model: str | None,
    judge_model: str | None,
    models: Mapping[str, str] | None,
    rollouts: int | None,
    turns: int | None,
    seed: int | None,
    output: str | Path | None,
    score: bool,
    target_system: str | None,
    base_url: str | None,
    concurrency: int | None,
    timeout: float | None,
    max_cost: float | None,
    max_runtime: float | None,
    cache: bool,
    resume: str | Path | None,
) -> RunRequest:
    """The request :func:`run`'s arguments make, checked as the command line checks its."""
    configs = () if config is None else _many(config)
    targets = tuple(str(t) for t in (() if target is None else _many(target)))
    if resume is not None:
        given = [
            name
            for name, value in (
                ("config", config),
                ("target", target),
                ("persona_model", persona_model),
                ("judge_model", judge_model),
                ("models", models),
                ("rollouts", rollouts),
                ("turns", turns),
                ("seed", seed),
                ("output", output),
                ("target_system", target_system),
                ("timeout", timeout),
                ("max_cost", max_cost),
                ("max_runtime", max_runtime),
            )
            if value
        ]
        if given:
            raise LoomError(
                "resume continues a run with the settings in its run.json; leave out "
                + ", ".join(given)
            )
        return RunRequest(
            score=score,
            cache=cache,
            resume=Path(resume),
            concurrency=concurrency,
            base_url=base_url,
        )
    if rollouts is not None and rollouts < 1:
        raise LoomError(f"rollouts={rollouts}: run at least 1 rollout")
    if turns is not None and turns < 1:
        raise LoomError(f"turns={turns}: run at least 1 turn")
    options = RunOptions(
        turns=turns,
        rollouts=rollouts or 1,
        seed=seed,
        persona_model=persona_model,
        target=targets[0] if len(targets) == 1 else None,
        judge_model=judge_model,
        target_system=target_system,
        base_url=base_url,
        output=None if output is None else Path(output),
        concurrency=concurrency or DEFAULT_CONCURRENCY,
        max_cost_usd=max_cost,
        max_runtime_s=max_runtime,
        timeout_s=timeout or 120.0,
        role_models=dict(models or {}),
    )
    given = [n for n, v in (("rollouts", rollouts), ("concurrency", concurrency)) if v]
    return RunRequest(
        configs=configs, targets=targets, options=options, score=score, cache=cache, given=given
    )


def _many(value: str | Path | Sequence[str | Path]) -> tuple[str | Path, ...]:
    """One value or a list of them, as a tuple (a string is one value, not its letters)."""
    if isinstance(value, str | Path):
        return (value,)
    return tuple(value)
