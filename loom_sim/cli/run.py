"""``loom-sim run CONFIG``: rollouts of a persona against a model, into a run directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import trio

from loom_sim.errors import LoomError
from loom_sim.runtime.progress import PlainProgress, RichProgress
from loom_sim.runtime.run import RunOptions, execute, make_hub, plan_resume, plan_run, write_plan

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
)


@click.command()
@click.argument("config_path", metavar="CONFIG", required=False, type=click.Path(path_type=str))
@click.option(
    "--turns", "-n", type=click.IntRange(min=1), help="Turns per rollout (default: expected_turns)."
)
@click.option(
    "--rollouts", "-r", type=click.IntRange(min=1), help="Independent rollouts (default 1)."
)
@click.option("--seed", type=int, help="Fixes every random choice (default: random, recorded).")
@click.option(
    "--persona-model", metavar="SPEC", help="Model playing the persona (default local/smollm2)."
)
@click.option("--target", metavar="SPEC", help="Model under evaluation (default local/smollm2).")
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
    type=click.Choice(["none", "contradiction", "helpfulness", "both"]),
    help="An adversary in place of the interlocutor (default: the config's, else none).",
)
@click.option(
    "--adversary-model",
    metavar="SPEC",
    help="Model wording the adversary's probes (default: the config's, else the judge's).",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="OpenAI-compatible server for openai/ models (else OPENAI_BASE_URL).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (default results/<config>-<hash>-<time>).",
)
@click.option(
    "--concurrency",
    "-j",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Rollouts running at once.",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0),
    metavar="USD",
    help="Stop rollouts once the run has spent this much.",
)
@click.option(
    "--max-runtime",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Stop rollouts after this long.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    metavar="SECONDS",
    help="Longest wait for one model call before it is retried (default 120).",
)
@click.option("--no-score", is_flag=True, help="Skip scoring (and the report) at the end.")
@click.option(
    "--resume",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="RUN_DIR",
    help="Continue an interrupted run.",
)
def run(
    config_path: str | None,
    resume: Path | None,
    base_url: str | None,
    concurrency: int,
    no_score: bool,
    **defining,
) -> None:
    """Run rollouts of CONFIG; every completed turn is written as it completes."""
    if resume is not None:
        given = [
            f"--{name.replace('_', '-')}" for name in _DEFINING if defining.get(name) is not None
        ]
        if config_path or given:
            raise LoomError(
                "--resume continues a run with the settings in its run.json; leave out "
                + ", ".join(([config_path] if config_path else []) + given)
            )
        plan = plan_resume(resume, concurrency=concurrency, base_url=base_url)
    else:
        if config_path is None:
            raise LoomError("give a CONFIG file to run, or --resume RUN_DIR")
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
            concurrency=concurrency,
            max_cost_usd=defining["max_cost"],
            max_runtime_s=defining["max_runtime"],
            timeout_s=defining["timeout"] or 120.0,
            adversary=defining["adversary"],
            adversary_model=defining["adversary_model"],
        )
        plan = plan_run(config_path, options, argv=sys.argv[1:])
    hub = make_hub(plan)
    write_plan(plan)
    click.echo(f"run directory: {plan.dir}", err=True)
    try:
        if sys.stderr.isatty():
            with RichProgress() as progress:
                transcripts = trio.run(execute, plan, hub, progress)
        else:
            transcripts = trio.run(execute, plan, hub, PlainProgress())
    except KeyboardInterrupt:
        raise LoomError(
            "interrupted; completed turns are saved. "
            f"Continue with: loom-sim run --resume {plan.dir}"
        ) from None
    failed = [t for t in transcripts if t.status == "error"]
    for t in transcripts:
        detail = t.stop_detail if t.status == "done" else t.error
        click.echo(f"{t.rollout}: {t.status}, {len(t.turns)} turns ({detail})")
    if not no_score and any(t.turns for t in transcripts):
        from loom_sim.cli.score import score_directory
        from loom_sim.scoring.engine import ScoreOptions

        click.echo("scoring...", err=True)
        summary = score_directory(
            plan.dir, ScoreOptions(concurrency=concurrency), plan.base_url, plan.timeout_s
        )
        click.echo(
            f"scored {summary.scored_turns} turns "
            f"({summary.failures} scores the judge could not give)"
        )
        _report(plan.dir)
    click.echo(f"results in {plan.dir}")
    if failed:
        raise LoomError(
            f"{len(failed)} of {len(transcripts)} rollouts ended in error; their completed turns "
            f"are kept. Continue them with: loom-sim run --resume {plan.dir}"
        )


def _report(run_dir: Path) -> None:
    from loom_sim.report import write_report

    for path in write_report(run_dir):
        click.echo(f"report: {path}")
