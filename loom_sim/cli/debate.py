"""``loom-sim debate DECK``: a group debate with crux rooms, streamed live; and
``loom-sim contracts build DECK_CONFIG``: persona contracts from a local corpus."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import trio
from rich.console import Console
from rich.text import Text

from loom_sim.cli.options import (
    allow_outside_option,
    base_url_option,
    parse_pairs,
    timeout_option,
)
from loom_sim.core.lock import hold
from loom_sim.debate.cards import CardRecord, RejectedCard
from loom_sim.debate.files import Summary
from loom_sim.debate.records import ChatTurn, DetectionRound, ExitCheck, RoomLine, RoomStart
from loom_sim.debate.report import write_report
from loom_sim.debate.runtime.plan import (
    DEBATE_ROLES,
    DebateOptions,
    check_new,
    make_hub,
    plan_debate,
    plan_resume,
)
from loom_sim.debate.runtime.run import Debate
from loom_sim.debate.settings import MAX_MESSAGES
from loom_sim.errors import LoomError
from loom_sim.resources import find

_DEFINING = ("topic", "personas", "messages", "seed", "model", "policy", "similarity", "output")


class LiveDebate:
    """Prints a debate as it happens: each message with its speaker and intent, failed turns
    with why, detection rounds that asked the model, rooms opening, exit checks, cards.
    Message text goes to rich as plain ``Text``, never as markup."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(highlight=False)

    def _print(self, *parts: tuple[str, str]) -> None:
        text = Text()
        for part, style in parts:
            text.append(part, style)
        self.console.print(text)

    def started(self, topic: str, names: dict[str, str], resumed_at: int) -> None:
        where = f" (resumed at turn {resumed_at})" if resumed_at else ""
        self._print((f"Debate: {topic}{where}", "bold"), ("  " + ", ".join(names.values()), "dim"))

    def turn(self, turn: ChatTurn, names: dict[str, str]) -> None:
        who = names.get(turn.speaker, turn.speaker)
        label = turn.intent or turn.kind
        if turn.said:
            redrafted = f" (redrafted {len(turn.rejected)}×)" if turn.rejected else ""
            self._print(
                (f"{turn.id:>4} ", "dim"),
                (who, "bold cyan"),
                (f" · {label}{redrafted}: ", "blue"),
                (turn.text, ""),
            )
        else:
            why = "; ".join(turn.rejected[-1].reasons) if turn.rejected else turn.error or ""
            self._print(
                (f"{'—':>4} ", "dim"),
                (who, "bold cyan"),
                (f" · {label}: failed turn after {len(turn.rejected)} drafts ({why})", "red"),
            )

    def round(self, detection: DetectionRound, names: dict[str, str]) -> None:
        if not detection.asked:
            return
        found = ", ".join(
            f"{' × '.join(names.get(p, p) for p in d.pair)} {d.confidence:.2f}"
            + ("" if d.corroborated else " (not corroborated)")
            for d in detection.found
        )
        held = [", ".join(d.held_back) for d in detection.decisions if not d.spawn]
        self._print(
            (f"     detection round {detection.round}: ", "magenta"),
            (found or "nothing substantive", "magenta"),
            ((f" — held back: {'; '.join(held)}") if held else "", "dim"),
        )

    def room_opened(self, start: RoomStart, names: dict[str, str]) -> None:
        a, b = (names.get(p, p) for p in start.pair)
        self._print((f"  ▶ crux room {start.id}: {a} × {b} on “{start.question}”", "bold yellow"))

    def room_line(self, start: RoomStart, line: RoomLine, names: dict[str, str]) -> None:
        if isinstance(line, ExitCheck):
            verdict = f"surfaced ({line.how})" if line.surfaced else "not yet"
            self._print((f"      exit check after {line.after}: {verdict}", "yellow"))
        elif line.said:
            self._print(
                (f"      {line.id} ", "dim"),
                (names.get(line.speaker, line.speaker), "bold"),
                (": ", ""),
                (line.text, ""),
            )
        else:
            self._print((f"      {names.get(line.speaker, line.speaker)}: failed message", "red"))

    def carded(self, outcome: CardRecord | RejectedCard) -> None:
        if isinstance(outcome, RejectedCard):
            self._print((f"  ■ no valid card for {outcome.room}: {outcome.problems[-1:]}", "red"))
            return
        card = outcome.card
        stances = ", ".join(f"{p['persona']} {p['stance']}" for p in card["positions"])
        self._print(
            (f"  ■ {outcome.id} ", "bold green"),
            (f"“{card['crux']}” · {card['type']} · {stances}", "green"),
        )

    def ended(self, summary: Summary) -> None:
        pass


@click.command()
@click.argument("deck_path", metavar="DECK", required=False)
@click.option("--topic", help="What they debate (default: the deck's topic).")
@click.option("--personas", metavar="A,B,C", help="Persona ids from the deck (default: all).")
@click.option(
    "--messages",
    "-n",
    type=click.IntRange(min=1, max=MAX_MESSAGES),
    help=f"Main-chat turns, openings included (at most {MAX_MESSAGES}).",
)
@click.option("--seed", type=int, help="Fixes every random choice (default: random, recorded).")
@click.option(
    "--model",
    "model",
    metavar="NAME=SPEC",
    multiple=True,
    help="A tier (cheap, strong) or a role ("
    + ", ".join(DEBATE_ROLES)
    + ") and its model; repeatable.",
)
@click.option(
    "--policy",
    type=click.Choice(["round_robin", "random", "least_recent", "addressed"]),
    help="Speaker policy (default: the deck's, else round_robin).",
)
@click.option(
    "--similarity",
    type=click.Choice(["embedding", "tfidf"]),
    help="How the detector's cheap signals compare claims (default embedding).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Debate directory (default results/debate-<deck>-<time>).",
)
@click.option(
    "--resume",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="DIR",
    help="Continue a stopped debate from its files.",
)
@base_url_option()
@timeout_option()
@allow_outside_option("deck")
def debate(
    deck_path: str | None,
    resume: Path | None,
    base_url: str | None,
    timeout: float,
    allow_outside: bool,
    **defining: Any,
) -> None:
    """A group debate among a deck's personas, streamed live: who speaks, with what intent,
    the crux rooms that open and the cards they produce. DECK is a file or a shipped deck's
    name (port_calder, planted_horizon, ...)."""
    ctx = click.get_current_context()
    if resume is not None:
        given = [f"--{n.replace('_', '-')}" for n in _DEFINING if defining.get(n)]
        if deck_path or given:
            raise LoomError(
                "--resume continues a debate with the settings in its debate.json; leave out "
                + ", ".join(([deck_path] if deck_path else []) + given)
            )
        ctx.with_resource(hold(resume))  # one writer per folder
        plan = plan_resume(resume, base_url)
    else:
        if deck_path is None:
            raise LoomError("give a DECK to debate, or --resume DIR")
        personas = defining["personas"]
        options = DebateOptions(
            topic=defining["topic"],
            personas=[p.strip() for p in personas.split(",") if p.strip()] if personas else None,
            messages=defining["messages"],
            seed=defining["seed"],
            models=parse_pairs(
                defining["model"], "--model", "NAME=SPEC, e.g. strong=openai/gpt-4.1"
            ),
            policy=defining["policy"],
            similarity=defining["similarity"],
            output=defining["output"],
            base_url=base_url,
            allow_outside=allow_outside,
        )
        plan = plan_debate(find(deck_path, "decks"), options, argv=sys.argv[1:])
    hub = make_hub(plan, timeout)
    if resume is None:
        ctx.with_resource(hold(plan.files.dir))  # one writer per folder
        check_new(plan.files)  # again, now that no other process can start a debate there
        plan.files.write_plan(plan.record)
    click.echo(f"debate directory: {plan.files.dir}", err=True)

    async def main() -> Summary:
        async with hub:
            runner = Debate(plan, lambda spec, slot: hub.client(spec, 0, slot), LiveDebate())
            return await runner.run()

    try:
        summary = trio.run(main)
    except (KeyboardInterrupt, BaseExceptionGroup) as err:
        # Ctrl-C reaches trio inside the debate's nursery, so it may arrive in a group.
        if isinstance(err, BaseExceptionGroup) and err.split(KeyboardInterrupt)[1] is not None:
            raise
        raise LoomError(
            f"interrupted; every completed message is in {plan.files.dir}. "
            f"Continue with: loom-sim debate --resume {plan.files.dir}"
        ) from None
    for path in write_report(plan.files.dir):
        click.echo(f"report: {path}")
    click.echo(
        f"{summary.said} messages, {summary.failed} failed turns, {summary.rooms} crux rooms, "
        f"{summary.cards} cards · results in {plan.files.dir}"
    )
    if summary.status == "error":
        raise LoomError(
            f"the debate stopped: {summary.error}. Its completed messages are kept; "
            f"continue with: {summary.resume}"
        )


@click.group()
def contracts() -> None:
    """Persona contracts for debates."""


@contracts.command("build")
@click.argument("config_path", metavar="DECK_CONFIG", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--model",
    "model",
    metavar="NAME=SPEC",
    multiple=True,
    help="A tier (cheap, strong) or role (relevance, contract) and its model.",
)
@base_url_option()
@timeout_option()
@allow_outside_option("build config")
def build(
    config_path: Path,
    model: tuple[str, ...],
    base_url: str | None,
    timeout: float,
    allow_outside: bool,
) -> None:
    """Build persona contracts from a local corpus (RSS/Atom files, JSON posts, plain text) by
    the 9-call pipeline, and write the deck. Killed between calls, the same command continues
    where it stopped."""
    from loom_sim.debate.builder import Builder, load_build
    from loom_sim.models.hub import ModelHub

    config = load_build(config_path, allow_outside=allow_outside)
    try:
        allocation = config.models.overridden(
            parse_pairs(model, "--model", "NAME=SPEC, e.g. strong=openai/gpt-4.1")
        )
    except ValueError as err:
        raise LoomError(str(err)) from None
    hub = ModelHub(base_url=base_url, timeout_s=timeout)
    for role in ("relevance", "contract"):
        hub.check(allocation.resolve(role).spec)

    async def main() -> Path:
        async with hub:
            builder = Builder(
                config_path,
                lambda role: hub.client(allocation.resolve(role).spec, 0, "builder"),
                allow_outside=allow_outside,
            )
            builder.config = builder.config.model_copy(update={"models": allocation})
            deck = await builder.build()
            click.echo(f"{builder.calls} model calls", err=True)
            return deck

    try:
        deck = trio.run(main)
    except (KeyboardInterrupt, BaseExceptionGroup) as err:
        if isinstance(err, BaseExceptionGroup) and err.split(KeyboardInterrupt)[1] is not None:
            raise
        raise LoomError(
            f"interrupted; the finished calls are saved. Continue with: loom-sim contracts build "
            f"{config_path}"
        ) from None
    click.echo(f"deck: {deck}")
