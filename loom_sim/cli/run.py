"""``loom-sim run CONFIG``: rollouts of a persona against a model, into a run directory."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from loom_sim.api.pipeline import RunRequest, run_pipeline
from loom_sim.cli.options import (
    AUTO_WORKERS,
    RegistryChoice,
    base_url_option,
    cache_option,
    chosen_executor,
    command_again,
    concurrency_option,
    executor_options,
    parse_pairs,
    timeout_option,
    workers_option,
)
from loom_sim.errors import LoomError
from loom_sim.models.pricing import Price
from loom_sim.plugins.actors import adversaries, responders
from loom_sim.rollout.runtime.run import DEFAULT_CONCURRENCY, RunOptions
from loom_sim.store.run_file import MAX_ROLLOUTS, MAX_TURNS

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
@workers_option()
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
    workers: int | None,
    **defining,
) -> None:
    """Run rollouts of CONFIG (a file, or a shipped example's name); every completed turn is
    written as it completes. Several CONFIGs, several --target, or a suite file: a matrix
    run of every config x target x rollout in one run directory."""
    if workers is None and ctx.get_parameter_source("executor") is ParameterSource.DEFAULT:
        workers = AUTO_WORKERS  # not asked for: the cores this machine gives (worker_count)
    elif executor == "ray" and ctx.get_parameter_source("workers") is ParameterSource.ENVIRONMENT:
        workers = None  # $LOOM_SIM_WORKERS is this machine's default; Ray places its own tasks
    runner = ctx.with_resource(chosen_executor(executor, address, cpus_per_cell, workers))
    targets: tuple[str, ...] = defining.pop("target")
    if resume is not None:
        # Every option the signature does not name defines the run (**defining collects
        # them), so no list of them is kept by hand.
        given = [f"--{name.replace('_', '-')}" for name, value in defining.items() if value]
        given += ["--target"] if targets else []
        if config_paths or given:
            raise LoomError(
                "--resume continues a run with the settings in its run.json; leave out "
                + ", ".join([*config_paths, *given])
            )
        request = RunRequest(
            score=not no_score,
            cache=cache,
            resume=resume,
            concurrency=concurrency,
            base_url=base_url,
        )
    else:
        if not config_paths:
            raise LoomError("give a CONFIG file to run, or --resume RUN_DIR")
        options = RunOptions(
            turns=defining["turns"],
            rollouts=defining["rollouts"] or 1,
            seed=defining["seed"],
            persona_model=defining["persona_model"],
            target=targets[0] if len(targets) == 1 else None,
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
        request = RunRequest(
            configs=config_paths,
            targets=targets,
            options=options,
            score=not no_score,
            cache=cache,
            shard=defining["shard"],
            argv=tuple(sys.argv[1:]),
            given=[name for name in ("rollouts", "concurrency") if _given(ctx, name)],
        )
    outcome = run_pipeline(
        request,
        runner,
        say=click.echo,
        # The command that continues this run, with the flags it was started with.
        again=lambda folder: command_again(ctx, ["run", "--resume", str(folder)], _continuing()),
    )
    if outcome.failure:
        raise LoomError(outcome.failure)


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the command line set this option (a suite's value yields to it)."""
    return ctx.get_parameter_source(name) not in (
        click.core.ParameterSource.DEFAULT,
        click.core.ParameterSource.DEFAULT_MAP,
        None,
    )


def _continuing() -> tuple[str, ...]:
    """The flags of ``run`` that are not recorded in run.json, which a resume needs again:
    the options the command's signature names (the others, in ``**defining``, are recorded),
    read from the signature so that no list of them is kept by hand."""
    assert run.callback is not None
    named = inspect.signature(run.callback).parameters.values()
    return tuple(
        p.name
        for p in named
        if p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in ("ctx", "config_paths", "resume")
    )
