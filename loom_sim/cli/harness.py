"""``loom-sim harness run|report`` and ``loom-sim studio``: simulated users driving programs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
import trio

from loom_sim.cli.options import (
    allow_outside_option,
    base_url_option,
    command_again,
    concurrency_option,
    parse_pairs,
    timeout_option,
)
from loom_sim.core.lock import hold
from loom_sim.errors import LoomError
from loom_sim.harness.packs import load_pack
from loom_sim.harness.plan import (
    HarnessOptions,
    HarnessPlan,
    check_cost_caps,
    plan_resume,
    plan_run,
)
from loom_sim.harness.records import HarnessTurn
from loom_sim.harness.run import execute
from loom_sim.models.hub import ModelHub
from loom_sim.models.pricing import PriceTable
from loom_sim.resources import find

# Options that define a run; --resume takes them from harness.json instead.
_DEFINING = ("scenario", "target", "repeat", "seed", "model", "output", "max_turns")
#: Sessions per scenario at most: each is a whole session of model calls and a program run.
MAX_REPEAT = 100
#: As a scenario's budget.max_turns.
MAX_TURNS = 1000
# Options harness.json does not hold as given: the command that continues a run repeats them.
_CONTINUING = ("base_url", "no_report")


class LineProgress:
    """One line per turn on stderr: what the user did, how it went, where the goal stands."""

    def session_started(self, name: str, max_turns: int, done: int) -> None:
        resumed = f", resuming after turn {done - 1}" if done else ""
        click.echo(f"{name}: up to {max_turns} turns{resumed}", err=True)

    def turn_done(self, name: str, turn: HarnessTurn) -> None:
        outcome = "failed" if turn.failed else "ok"
        flags = "".join(f" [{f.kind}]" for f in turn.audit)
        text = turn.action.text if len(turn.action.text) <= 60 else turn.action.text[:59] + "…"
        click.echo(
            f"{name} turn {turn.turn}: {text} -> {outcome}{flags}; progress "
            f"{turn.evaluation.progress:.2f}, confidence {turn.reflection.confidence:.2f}",
            err=True,
        )

    def session_ended(self, name: str, status: str, why: str) -> None:
        click.echo(f"{name}: {status} ({why})", err=True)


def _check_models(plan: HarnessPlan, hub: ModelHub) -> None:
    """Every model spec the run will call, checked before the first turn."""
    for spec in plan.record.models.values():
        hub.check(spec)
    for session in plan.sessions:
        model = getattr(session.target, "spec", None)
        if session.target.adapter == "model" and model:
            hub.check(model)


@click.group()
def harness() -> None:
    """Simulated users driving real chat programs (a scenario pack's personas and goals)."""


def _priced(prices: PriceTable) -> Callable[[str], bool]:
    return lambda spec: prices.price(spec) is not None


@harness.command("run")
@click.argument("pack_path", metavar="PACK", required=False)
@click.option("--scenario", "-s", multiple=True, help="Only this scenario (repeatable).")
@click.option(
    "--target",
    metavar="NAME|KIND:ADDRESS",
    help="A target of the pack by name, or pty:COMMAND, http:URL, model:SPEC "
    "(default: each scenario's).",
)
@click.option(
    "--repeat",
    "-k",
    type=click.IntRange(min=1, max=MAX_REPEAT),
    help="Sessions per scenario, for pass^k and Wilson intervals in the report (default 1, "
    f"at most {MAX_REPEAT}).",
)
@click.option("--seed", type=int, help="Fixes every random choice (default: random, recorded).")
@click.option(
    "--model",
    "model",
    metavar="ROLE=SPEC",
    multiple=True,
    help="The model of a role: user, reflector, evaluator (default: the pack's, else "
    "local/smollm2).",
)
@click.option(
    "--max-turns",
    type=click.IntRange(min=1, max=MAX_TURNS),
    help="Cap every scenario's turns.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (default results/harness-<pack>-<hash>-<time>).",
)
@concurrency_option("Sessions running at once.", default=1)
@timeout_option()
@base_url_option()
@click.option("--no-report", is_flag=True, help="Skip the report at the end.")
@click.option(
    "--resume",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="RUN_DIR",
    help="Continue an interrupted run.",
)
@allow_outside_option("pack")
@click.pass_context
def run(
    ctx: click.Context,
    pack_path: str | None,
    resume: Path | None,
    concurrency: int,
    timeout: float,
    base_url: str | None,
    no_report: bool,
    allow_outside: bool,
    **defining,
) -> None:
    """Run the scenarios of PACK (a file, or a shipped pack's name): a simulated user per
    session drives the target; every completed turn is written as it completes."""
    ctx = click.get_current_context()
    if resume is not None:
        # --target may come again: a target whose credentials the run did not store.
        given = [f"--{n.replace('_', '-')}" for n in _DEFINING if defining.get(n) and n != "target"]
        if pack_path or given:
            raise LoomError(
                "--resume continues a run with the settings in its harness.json; leave out "
                + ", ".join(([pack_path] if pack_path else []) + given)
            )
        ctx.with_resource(hold(resume))  # one writer per folder
        plan = plan_resume(resume, defining.get("target"))
        base_url = base_url or plan.record.base_url  # redacted: one with credentials is given
        prices = ModelHub(base_url=base_url).prices
        pack, scenarios = plan.pack, [s.scenario for s in plan.sessions]
        check_cost_caps(pack, scenarios, plan.record.models, plan.record.target, _priced(prices))
    else:
        if pack_path is None:
            raise LoomError("give a PACK to run (e.g. studio_benchmarks), or --resume RUN_DIR")
        options = HarnessOptions(
            scenarios=tuple(defining["scenario"]),
            target=defining["target"],
            repeat=defining["repeat"] or 1,
            seed=defining["seed"],
            models=parse_pairs(defining["model"], "--model", "ROLE=SPEC, e.g. user=openai/gpt-4.1"),
            output=defining["output"],
            concurrency=concurrency,
            timeout_s=timeout,
            max_turns=defining["max_turns"],
            base_url=base_url,
        )
        loaded = load_pack(find(pack_path, "packs"), allow_outside=allow_outside)
        checker = ModelHub(base_url=base_url, timeout_s=timeout)
        plan = plan_run(
            loaded,
            options,
            sys.argv[1:],
            check=checker.check,
            claim=lambda folder: ctx.with_resource(hold(folder)),
            priced=_priced(checker.prices),
        )
    click.echo(f"run directory: {plan.dir}", err=True)
    # A target whose credentials were not stored is given again on resume (as TARGET).
    keep = (*_CONTINUING, "target") if plan.record.target_secret else _CONTINUING
    resume_with = command_again(ctx, ["harness", "run", "--resume", str(plan.dir)], keep)

    async def main() -> list[dict]:
        async with ModelHub(base_url=base_url, timeout_s=plan.record.timeout_s) as hub:
            _check_models(plan, hub)  # again on resume: the environment may have changed
            return await execute(plan, hub.client, LineProgress())

    try:
        briefs = trio.run(main)
    except (KeyboardInterrupt, BaseExceptionGroup) as exc:
        # Ctrl-C reaches trio's main task inside the sessions' nurseries, which wrap it.
        if isinstance(exc, BaseExceptionGroup) and exc.subgroup(KeyboardInterrupt) is None:
            raise
        raise LoomError(
            f"interrupted; completed turns are saved. Continue with: {resume_with}"
        ) from None
    for brief in briefs:
        passed = "passed" if brief.get("passed") else "not passed"
        click.echo(
            f"{brief['session']}: {brief['status']} ({brief['stop_reason'] or 'error'}), "
            f"{brief['turns']} turns, score {brief['score']:.2f}, {passed}"
        )
    if not no_report:
        from loom_sim.harness.report import write_report

        for path in write_report(plan.dir):
            click.echo(f"report: {path}")
    click.echo(f"results in {plan.dir}")
    failed = [b["session"] for b in briefs if b["status"] == "error"]
    if failed:
        raise LoomError(
            f"{len(failed)} of {len(briefs)} sessions ended in error ({', '.join(failed)}); their "
            f"completed turns are kept. Continue them with: {resume_with}"
        )


@harness.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
def report(run_dir: Path) -> None:
    """Aggregate a harness run: pass rates, pass^k, components, per-turn charts."""
    from loom_sim.harness.report import collect, markdown, write_report

    paths = write_report(run_dir)
    click.echo(markdown(collect(run_dir)), nl=False)
    for path in paths:
        click.echo(f"report: {path}", err=True)


@click.command(
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        "help_option_names": [],
    },
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def studio(args: tuple[str, ...]) -> None:
    """loom-sim's demo image studio, an interactive chat program (--help for its options)."""
    import contextlib
    import signal

    from loom_sim.studio import main

    # A chat program, not a run: SIGTERM (how the harness stops its targets) ends it at once.
    with contextlib.suppress(ValueError):  # not the main thread: no signal is ours to set
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    code = main(list(args))
    if code:
        raise SystemExit(code)
