"""``loom-sim probe PROBE_CONFIG``: two-turn probes for self-contradiction, static vs adaptive
vs bandit; ``loom-sim probe --summary-only DIR`` rebuilds a probe directory's summary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import trio

from loom_sim.cli.options import base_url_option, concurrency_option, timeout_option
from loom_sim.errors import LoomError
from loom_sim.probe.plan import DEFAULT_MODEL, ProbeOptions, make_hub, plan_probe, write_plan
from loom_sim.probe.progress import PlainProbeProgress, RichProbeProgress
from loom_sim.probe.records import MODES
from loom_sim.probe.runner import execute
from loom_sim.probe.summary import load_logs, write_summary
from loom_sim.probe.summary_md import percent, rate_of
from loom_sim.resources import find

# Options that define a probe; --summary-only takes none of them.
_DEFINING = (
    "target",
    "judge_model",
    "modes",
    "runs",
    "seed",
    "bandit_state",
    "target_system",
    "output",
)


@click.command()
@click.argument(
    "config_path", metavar="PROBE_CONFIG", required=False, type=click.Path(path_type=str)
)
@click.option("--target", metavar="SPEC", help=f"Model under test (default {DEFAULT_MODEL}).")
@click.option(
    "--judge-model", metavar="SPEC", help=f"Contradiction judge (default {DEFAULT_MODEL})."
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice([*MODES, "all"]),
    help="Turn-2 policy: static, adaptive, bandit, or all three (default); repeatable.",
)
@click.option(
    "--runs", "-n", type=click.IntRange(min=1), help="Runs per mode (default: the config's)."
)
@click.option("--seed", type=int, help="Fixes every random choice (default: random, recorded).")
@concurrency_option("Static and adaptive runs at once (the bandit runs one at a time).")
@click.option(
    "--bandit-state",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The bandit's counts, loaded before and saved after each run "
    "(default results/probe-state/<config>--<target>.json).",
)
@click.option("--target-system", metavar="TEXT", help="System prompt of the target.")
@base_url_option()
@timeout_option()
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Probe directory (default results/probe-<config>-<time>); an existing probe "
    "directory gets the new modes' logs.",
)
@click.option(
    "--summary-only",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="Run nothing: rebuild DIR's summary from its logs and print it.",
)
def probe(
    config_path: str | None,
    summary_only: Path | None,
    concurrency: int,
    base_url: str | None,
    timeout: float,
    **defining: Any,
) -> None:
    """Probe a target for self-contradictions: N two-turn conversations per mode.
    PROBE_CONFIG is a file or a shipped prompt set's name (moral_dilemmas, factual_pressure,
    combined)."""
    if summary_only is not None:
        given = [f"--{n.replace('_', '-')}" for n in _DEFINING if defining.get(n)]
        if config_path is not None or given:
            raise LoomError(
                "--summary-only rebuilds an existing probe's summary; leave out "
                + ", ".join(([str(config_path)] if config_path else []) + given)
            )
        _summarise(summary_only)
        return
    if config_path is None:
        raise LoomError("give a PROBE_CONFIG to run, or --summary-only DIR")
    modes = defining["modes"]
    options = ProbeOptions(
        target=defining["target"] or DEFAULT_MODEL,
        judge=defining["judge_model"] or DEFAULT_MODEL,
        modes=MODES if not modes or "all" in modes else tuple(dict.fromkeys(modes)),
        runs=defining["runs"],
        seed=defining["seed"],
        concurrency=concurrency,
        bandit_state=defining["bandit_state"],
        target_system=defining["target_system"],
        base_url=base_url,
        timeout_s=timeout,
        output=defining["output"],
    )
    plan = plan_probe(find(config_path, "probes"), options, argv=sys.argv[1:])
    hub = make_hub(plan)
    write_plan(plan)
    click.echo(f"probe directory: {plan.dir}", err=True)
    if "bandit" in plan.modes:
        click.echo(f"bandit state: {plan.bandit_state}", err=True)
    try:
        if sys.stderr.isatty():
            with RichProbeProgress() as progress:
                trio.run(execute, plan, hub, progress)
        else:
            trio.run(execute, plan, hub, PlainProbeProgress())
    except KeyboardInterrupt:
        raise LoomError(
            f"interrupted; the completed runs are in {plan.dir}. "
            f"Summarise them with: loom-sim probe --summary-only {plan.dir}"
        ) from None
    finally:
        if any(load_logs(plan.dir).values()):  # a stopped probe's completed runs are summarised
            _summarise(plan.dir)


def _summarise(directory: Path) -> None:
    summary, paths = write_summary(directory)
    print_summary(summary)
    for path in paths:
        click.echo(f"summary: {path}")


def _interval(ci: list[float] | None) -> str:
    return "—" if not ci else f"{100 * ci[0]:.0f}–{100 * ci[1]:.0f}%"


def print_summary(summary: dict[str, Any]) -> None:
    """The summary's main tables on the terminal (the full page is summary.md)."""
    from rich.table import Table

    from loom_sim.cli.console import table_console

    console = table_console()
    models = summary["models"]
    console.print(
        f"[bold]{summary['config_name']}[/bold] · target {models.get('target')} · "
        f"judge {models.get('judge')} · seed {summary['seed']}",
        markup=True,
        highlight=False,
    )
    for note in summary["notes"]:
        console.print(f"note: {note}", markup=False, highlight=False)
    table = Table(title="contradictions found, by mode")
    for column in ("mode", "runs", "found", "rate", "95% CI", "unjudged"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    table.add_column("regret/run", justify="right")
    for mode, e in summary["modes"].items():
        regret = e["regret_per_run"]
        table.add_row(
            mode,
            str(e["runs"]),
            f"{e['successes']}/{e['judged']}",
            percent(e["rate"]),
            _interval(e["ci95"]),
            str(e["unjudged"]),
            "—" if regret is None else f"{regret:.3f}",
        )
    console.print(table)
    modes = list(summary["modes"])
    for key, title in (("by_category", "Turn-1 category"), ("by_strategy", "strategy")):
        groups = sorted({k for per_mode in summary[key].values() for k in per_mode})
        table = Table(title=f"success by {title} (successes/judged · rate (95% interval))")
        table.add_column(title)
        for mode in modes:
            table.add_column(mode, justify="right")
        for group in groups:
            cells = [
                rate_of(summary[key][m][group]).text() if group in summary[key][m] else "—"
                for m in modes
            ]
            table.add_row(group, *cells)
        console.print(table)
    for c in summary["comparisons"]:
        found_by, baseline = c["found_by"], c["baseline"]
        console.print(
            f"{found_by} found {c[f'only_{found_by}']} contradictions {baseline} missed "
            f"({baseline} found {c[f'only_{baseline}']} {found_by} missed) in {c['paired']} "
            "paired runs",
            highlight=False,
        )
    regret = summary["regret"]
    if regret["curves"].get("bandit"):
        curve = regret["curves"]["bandit"]
        console.print(
            f"bandit cumulative regret after {len(curve)} runs: {curve[-1]:.2f} "
            f"(reference: {regret['reference']} rates)",
            highlight=False,
        )
        state = regret.get("bandit_state")
        if state:
            console.print(
                f"bandit state {state['path']}: {state['learned_before']} outcomes learned "
                f"before, {state['learned_after']} after",
                highlight=False,
            )
