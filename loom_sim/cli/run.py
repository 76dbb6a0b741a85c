"""``loom-sim run CONFIG``: rollouts of a persona against a model, into a run directory."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from loom_sim.cli.cache import open_cache
from loom_sim.cli.options import (
    RegistryChoice,
    base_url_option,
    cache_option,
    chosen_executor,
    command_again,
    concurrency_option,
    executor_options,
    parse_pairs,
    timeout_option,
)
from loom_sim.compare.headline import print_headline
from loom_sim.core import interrupt
from loom_sim.core.lock import hold
from loom_sim.errors import LoomError
from loom_sim.executors import CellBatch
from loom_sim.models.pricing import Price
from loom_sim.plugins.actors import adversaries, responders
from loom_sim.resources import find
from loom_sim.rollout.runtime.cells import plan_cells
from loom_sim.rollout.runtime.progress import PlainProgress, RichProgress
from loom_sim.rollout.runtime.run import (
    DEFAULT_CONCURRENCY,
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
from loom_sim.store.run_file import MAX_ROLLOUTS, MAX_TURNS

if TYPE_CHECKING:
    from loom_sim.executors import Executor
    from loom_sim.models.hub import ModelHub
    from loom_sim.models.retry import Faults
    from loom_sim.store.records import Transcript

# Options that define a run; --resume takes them from run.json instead.
_DEFINING = (
    "timeout",
    "turns",
    "rollouts",
    "seed",
    "persona_model",
    "target",
    "judge_model",
    "target_system",
    "output",
    "max_cost",
    "max_runtime",
    "adversary",
    "adversary_model",
    "responder",
    "model",
    "price",
    "shard",
)

_ADVERSARY = RegistryChoice("adversary", lambda: ["none", *(a.name for a in adversaries()), "both"])
_RESPONDER = RegistryChoice("responder", lambda: [r.name for r in responders()])


def _prices(values: tuple[str, ...]) -> dict[str, Price]:
    prices = {}
    for spec, text in parse_pairs(values, "--price", "SPEC=IN/OUT, e.g. openai/x=2.5/10").items():
        try:
            given, taken = (float(x) for x in text.split("/"))
        except ValueError:
            raise LoomError(
                f"--price {spec}={text}: write the USD per million input and output tokens as "
                "IN/OUT, e.g. 2.5/10"
            ) from None
        if given < 0 or taken < 0:
            raise LoomError(f"--price {spec}={text}: prices cannot be negative")
        prices[spec] = Price(given, taken)
    return prices


@click.command()
@click.argument("config_paths", metavar="CONFIG...", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--turns",
    "-n",
    type=click.IntRange(1, MAX_TURNS),
    help="Turns per rollout (default: expected_turns).",
)
@click.option(
    "--rollouts",
    "-r",
    type=click.IntRange(1, MAX_ROLLOUTS),
    help="Independent rollouts (default 1).",
)
@click.option("--seed", type=int, help="Fixes every random choice (default: random, recorded).")
@click.option(
    "--persona-model", metavar="SPEC", help="Model playing the persona (default local/smollm2)."
)
@click.option(
    "--target",
    metavar="SPEC",
    multiple=True,
    help="Model under evaluation (default local/smollm2); repeat it, or give several CONFIGs, "
    "for a matrix run of every config x target.",
)
@click.option(
    "--judge-model",
    metavar="SPEC",
    help="Model judging triggers and scores (default local/smollm2).",
)
@click.option(
    "--target-system", metavar="TEXT", help="System prompt of the model under evaluation."
)
@click.option(
    "--adversary",
    type=_ADVERSARY,
    help="An adversary in place of the interlocutor; both: every adversary in turn "
    "(default: the config's, else none).",
)
@click.option(
    "--adversary-model",
    metavar="SPEC",
    help="Model wording the adversary's probes (default: the config's, else the judge's).",
)
@click.option(
    "--responder",
    type=_RESPONDER,
    multiple=True,
    help="Who answers the persona, by registered name; repeat for several in rotation "
    "(overrides --adversary).",
)
@click.option(
    "--model",
    "model",
    metavar="ROLE=SPEC",
    multiple=True,
    help="The model of any role (persona, interlocutor, judge, adversary, or a responder's).",
)
@click.option(
    "--price",
    metavar="SPEC=IN/OUT",
    multiple=True,
    help="A model's price in USD per million input/output tokens (for --max-cost).",
)
@base_url_option()
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (default results/<config>-<hash>-<time>).",
)
@concurrency_option(
    f"Rollouts running at once (default {DEFAULT_CONCURRENCY}; a resume keeps the run's).",
    default=None,
)
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0),
    metavar="USD",
    help="Stop rollouts once the run has spent this much (every model needs a price).",
)
@click.option(
    "--max-runtime",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Stop rollouts after this long.",
)
@timeout_option(default=None)
@click.option("--no-score", is_flag=True, help="Skip scoring (and the report) at the end.")
@cache_option()
@executor_options()
@click.option(
    "--shard",
    metavar="K/N",
    help="Run only shard K of N of the run's cells (needs --seed); join the shards' folders "
    "with loom-sim merge.",
)
@click.option(
    "--resume",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="RUN_DIR",
    help="Continue an interrupted run.",
)
@click.pass_context
def run(
    ctx: click.Context,
    config_paths: tuple[str, ...],
    resume: Path | None,
    base_url: str | None,
    concurrency: int | None,
    no_score: bool,
    cache: bool,
    executor: str,
    address: str | None,
    cpus_per_cell: float | None,
    **defining,
) -> None:
    """Run rollouts of CONFIG (a file, or a shipped example's name); every completed turn is
    written as it completes. Several CONFIGs, several --target, or a suite file: a matrix
    run of every config x target x rollout in one run directory."""
    from loom_sim.cli import matrix
    from loom_sim.store.matrix_file import is_matrix

    runner = ctx.with_resource(chosen_executor(executor, address, cpus_per_cell))
    targets: tuple[str, ...] = defining.pop("target")
    config_path = config_paths[0] if config_paths else None
    shard = parse_shard(defining["shard"]) if defining["shard"] else None
    if resume is not None:
        given = [f"--{name.replace('_', '-')}" for name in _DEFINING if defining.get(name)]
        given += ["--target"] if targets else []
        if config_paths or given:
            raise LoomError(
                "--resume continues a run with the settings in its run.json; leave out "
                + ", ".join([*config_paths, *given])
            )
        # One writer per folder: held until the command ends, scoring included.
        ctx.with_resource(hold(resume))
        if is_matrix(resume):
            matrix.run_matrix(
                matrix.resume_plan(resume, concurrency, base_url), no_score, cache, runner
            )
            return
        plan = plan_resume(resume, concurrency=concurrency, base_url=base_url)
    else:
        if config_path is None:
            raise LoomError("give a CONFIG file to run, or --resume RUN_DIR")
        defining["target"] = targets[0] if len(targets) == 1 else None
        options = RunOptions(
            turns=defining["turns"],
            rollouts=defining["rollouts"] or 1,
            seed=defining["seed"],
            persona_model=defining["persona_model"],
            target=defining["target"],
            judge_model=defining["judge_model"],
            target_system=defining["target_system"],
            base_url=base_url,
            output=defining["output"],
            concurrency=concurrency or DEFAULT_CONCURRENCY,
            max_cost_usd=defining["max_cost"],
            max_runtime_s=defining["max_runtime"],
            timeout_s=defining["timeout"] or 120.0,
            adversary=defining["adversary"],
            adversary_model=defining["adversary_model"],
            responders=tuple(defining["responder"]),
            role_models=parse_pairs(defining["model"], "--model", "ROLE=SPEC, e.g. judge=openai/x"),
            prices=_prices(defining["price"]),
        )
        paths = [find(p, "examples", "ported") for p in config_paths]
        if shard is not None:
            _check_seeded(paths, options)
        if matrix.wanted(paths, targets):
            plan_ = matrix.new_plan(paths, list(targets), options, argv=sys.argv[1:])
            if shard is not None:
                shard_matrix(plan_, shard, rename=options.output is None)
            matrix.run_matrix(plan_, no_score, cache, runner, claim=_claim(ctx))
            return
        plan = plan_run(paths[0], options, argv=sys.argv[1:])
        if shard is not None:
            shard_run(plan, shard, rename=options.output is None)
    # The command that continues this run, with the flags it was started with.
    again = command_again(ctx, ["run", "--resume", str(plan.dir)], _CONTINUING)
    store = ctx.with_resource(open_cache(cache))
    hub = make_hub(plan, store)
    if resume is None:  # before any note: a run refused for its folder says one line
        _claim(ctx)(plan.dir)
    for spec in unknown_prices(hub, plan.models):
        click.echo(
            f"note: {spec} has no known price: its cost is recorded as unknown "
            "(give --price SPEC=IN/OUT or the config's models.pricing to count it)",
            err=True,
        )
    if resume is None:
        note = reach_note(plan.config, plan.record.turns)
        if note:
            click.echo(f"note: {note}", err=True)
    write_plan(plan)
    click.echo(f"run directory: {plan.dir}", err=True)
    batch = CellBatch(
        plan_cells(plan),
        hub,
        plan.record.budgets,
        plan.concurrency,
        plan.dir,
        plan.base_url,
    )
    live = sys.stderr.isatty()
    transcripts = _rollouts(plan, hub, runner, batch, again, live)
    failed = [t for t in transcripts if t.status == "error"]
    _closing_summary(transcripts, hub.retry.faults, tabled=live and sys.stdout.isatty())
    if not no_score and any(t.turns for t in transcripts):
        from loom_sim.cli.score import score_directory
        from loom_sim.rollout.scoring.engine import ScoreOptions

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
        click.echo(
            f"scored {summary.scored_turns} turns "
            f"({summary.failures} scores the judge could not give)"
        )
        if plan.record.shard is None:
            _report(plan.dir)
            print_headline(plan.dir)
    if plan.record.shard is not None:
        _merge_hint(plan.dir, plan.record.shard)
    click.echo(f"results in {plan.dir}")
    if failed:
        raise LoomError(
            f"{len(failed)} of {len(transcripts)} rollouts ended in error; their completed turns "
            f"are kept. Continue them with: {again}"
        )


def _claim(ctx: click.Context) -> Callable[[Path], None]:
    """What takes a new run's folder, once everything that can refuse the run has been
    checked and before anything is written: its lock, held to the end of the command, then a
    second look that no run was started there meanwhile."""

    def claim(folder: Path) -> None:
        ctx.with_resource(hold(folder))
        check_new(folder)

    return claim


# The flags of `run` that are not recorded in run.json: a resume needs them again.
_CONTINUING = (
    "no_score",
    "concurrency",
    "base_url",
    "cache",
    "executor",
    "address",
    "cpus_per_cell",
)


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


def _closing_summary(transcripts: list[Transcript], faults: Faults, *, tabled: bool) -> None:
    """Each rollout's outcome (unless the live table on this terminal showed it already), and
    the model-call faults of the session."""
    if tabled:
        turns = sum(len(t.turns) for t in transcripts)
        errors = sum(t.status == "error" for t in transcripts)
        click.echo(
            f"{len(transcripts)} rollout{'s' if len(transcripts) != 1 else ''}, {turns} turns"
            + (f", {errors} in error" if errors else "")
        )
    else:
        for t in transcripts:
            detail = t.error if t.status == "error" else None
            if t.status == "done" and t.stop_reason not in (None, "max_turns"):
                detail = t.stop_detail
            click.echo(
                f"{t.rollout}: {t.status}, {len(t.turns)} turns"
                + (f" ({detail})" if detail else "")
            )
    redone = sum(r.failed_attempts for t in transcripts for r in t.turns)
    said = faults.summary() or "no model call retried"
    if redone:
        said += f"; {redone} unusable repl{'ies' if redone != 1 else 'y'} asked again"
    click.echo(f"faults: {said}")


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


def _merge_hint(run_dir: Path, shard: Shard) -> None:
    click.echo(
        f"this folder holds shard {shard} of the run; when every shard has run, join them "
        f"(and report) with: loom-sim merge SHARD_DIR... -o RUN_DIR",
        err=True,
    )


def _report(run_dir: Path) -> None:
    from loom_sim.rollout.report import write_report

    for path in write_report(run_dir):
        click.echo(f"report: {path}")
