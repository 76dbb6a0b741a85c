"""The ``loom-sim`` command line.

One error boundary for every command: a :class:`~loom_sim.errors.LoomError` is the user's to fix
and is printed as plain lines; anything else is loom-sim's bug and is reported as such in one
line (``LOOM_SIM_DEBUG=1`` shows the traceback). Nobody sees a traceback by accident.

Commands are found in :data:`COMMANDS` and imported only when run: ``loom-sim --help`` reads
the table and loads no command, so it (and ``validate``) never pays for trio, httpx, numpy or
a model runtime (``tests/test_cli_imports.py`` keeps it so).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import NamedTuple

import click

from loom_sim.core.signals import sigterm_as_ctrl_c
from loom_sim.errors import MESSAGE_LIMIT, LoomError, describe
from loom_sim.redaction import redact


class Command(NamedTuple):
    """Where a command is defined, and what it does in one line (its help's first sentence)."""

    module: str  # in loom_sim.cli
    attribute: str
    summary: str


#: Every command, by name. A new command is one module in loom_sim/cli and one line here.
COMMANDS: dict[str, Command] = {
    "validate": Command(
        "validate",
        "validate",
        "Check config files (or shipped examples by name); print each problem as "
        "file:line:column: field: what is wrong.",
    ),
    "schema": Command(
        "schema",
        "schema",
        "Print the JSON Schema of loom-sim configs (or, with --pack, of scenario packs).",
    ),
    "dry-run": Command(
        "dry_run",
        "dry_run",
        "Show each turn's phase, intensities, injection and assembled prompt.",
    ),
    "run": Command(
        "run",
        "run",
        "Run rollouts of CONFIG (a file, or a shipped example's name); every completed turn "
        "is written as it completes.",
    ),
    "diagram": Command(
        "inspect",
        "diagram",
        "Export a state machine, drawn by transitions: mermaid text, Graphviz dot source, or svg "
        "(needs Graphviz's dot program).",
    ),
    "trace": Command(
        "inspect", "trace", "Show who said what to whom in a rollout, message by message."
    ),
    "signals": Command(
        "signals",
        "signals",
        "Loop spans, novelty, initiative, convergence and formulaic turns of each conversation "
        "in PATHS.",
    ),
    "report": Command(
        "report",
        "report",
        "Write report.json (every number), report.md (a one-minute summary) and report.html "
        "(self-contained, with charts) for a run.",
    ),
    "view": Command(
        "view",
        "view",
        "Read a rollout turn by turn: prompts injected, drafts rejected, replies, monitor "
        "events and scores.",
    ),
    "score": Command(
        "score",
        "score",
        "Score every turn of RUN_DIR; scored turns are skipped unless --force.",
    ),
    "import": Command(
        "imports",
        "import_",
        "Turn other tools' transcripts into run directories that score and report work on.",
    ),
    "port": Command("port", "port", "Turn other tools' personas into loom-sim configs."),
    "probe": Command(
        "probe",
        "probe",
        "Probe a target for self-contradictions: N two-turn conversations per mode.",
    ),
    "plugins": Command(
        "plugins",
        "plugins",
        "List the registered plug-ins of every kind, with where each comes from.",
    ),
    "compare": Command(
        "compare",
        "compare",
        "Compare runs (single runs or matrices): per config and target, every scorer's mean with "
        "its 95% interval, and each difference between targets, paired when the same config and "
        "seed ran against both, with a plain sentence when it is within noise.",
    ),
    "runs": Command(
        "runs",
        "runs",
        "List the runs in RESULTS_DIR (default ./results), newest first: date, configs, targets, "
        "turns, cost and status (complete; partial or failed: resumable with run --resume).",
    ),
    "export": Command(
        "export",
        "export",
        "Write a run's turns and rollouts as flat rows for pandas or a spreadsheet: config, "
        "target, turn, phase, intensities, every score (with its state), tokens and cost.",
    ),
    "serve": Command(
        "serve",
        "serve",
        "Browse the runs in RESULTS_DIR (default ./results) in a web browser: the runs list, "
        "each run's report (live while it runs), each rollout as a conversation with its "
        "scaffolding, monitors and scores, and the comparison of runs.",
    ),
    "cache": Command(
        "cache",
        "cache",
        "The response cache: model replies stored by provider, model, every sampling parameter, "
        "messages and seed, so a re-score or a re-run costs nothing (set its folder with "
        "LOOM_SIM_CACHE_DIR).",
    ),
    "merge": Command(
        "merge",
        "merge",
        "Join the folders of a run's shards (run --shard k/N, each with the same --seed) into "
        "one run directory: every cell copied from the shard that ran it.",
    ),
    "harness": Command(
        "harness",
        "harness",
        "Simulated users driving real chat programs (a scenario pack's personas and goals).",
    ),
    "studio": Command(
        "harness",
        "studio",
        "loom-sim's demo image studio, an interactive chat program (--help for its options).",
    ),
    "debate": Command(
        "debate",
        "debate",
        "A group debate among a deck's personas, streamed live: who speaks, with what intent, "
        "the crux rooms that open and the cards they produce.",
    ),
    "contracts": Command("debate", "contracts", "Persona contracts for debates."),
}


class _UserError(click.ClickException):
    def show(self, file=None) -> None:
        # The last stop of every message on its way to the terminal: redacted here too, so a
        # message built anywhere from a URL the user typed never shows its credentials.
        click.echo(redact(self.format_message()), err=True)


class _Interrupted(_UserError):
    exit_code = 130  # 128 + SIGINT, what shells expect of a program stopped by Ctrl-C


def _shown(message: str, exit_code: int = 1) -> _UserError:
    return _Interrupted(message) if exit_code == 130 else _UserError(message)


_INTERRUPTED = "interrupted (Ctrl-C)"


class LoomGroup(click.Group):
    """The commands of :data:`COMMANDS`, imported when run (and any added directly)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in COMMANDS:
            entry = COMMANDS[cmd_name]
            module = importlib.import_module(f"loom_sim.cli.{entry.module}")
            found = getattr(module, entry.attribute)
            from loom_sim.cli.examples import attach

            attach(found, cmd_name)
            self.add_command(found, cmd_name)
        return found

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list, from the table: no command module is imported to show it."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is not None:
                rows.append((name, command.get_short_help_str(limit)))
            else:  # a stand-in with the summary as its help: click shortens it as its own
                stand_in = click.Command(name, help=COMMANDS[name].summary)
                rows.append((name, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except LoomError as err:
            raise _shown(str(err), err.exit_code) from None
        except BaseExceptionGroup as group:
            # Concurrent tasks (rollouts, scorers) fail together: if every failure is one the
            # user can act on, show each of them; otherwise it is a bug, reported below.
            if group.subgroup(KeyboardInterrupt) is not None:
                raise _shown(_INTERRUPTED, 130) from None
            matched, rest = group.split(LoomError)
            if matched is not None and rest is None:
                messages = dict.fromkeys(str(e) for e in _leaves(matched))
                raise _UserError("\n".join(messages)) from None
            if os.environ.get("LOOM_SIM_DEBUG"):
                raise
            raise _UserError(_internal_error(next(iter(_leaves(group))), group)) from None
        except KeyboardInterrupt:  # outside the work that handles Ctrl-C itself
            raise _shown(_INTERRUPTED, 130) from None
        except BrokenPipeError:
            # `loom-sim dry-run ... | head`: the reader left; that is not an error.
            sys.stdout = open(os.devnull, "w")
            raise click.exceptions.Exit(0) from None
        except Exception as err:
            if os.environ.get("LOOM_SIM_DEBUG"):
                raise
            raise _UserError(_internal_error(err, err)) from None


def _internal_error(first: BaseException, raised: BaseException) -> str:
    """The one paragraph a loom-sim bug gets on the terminal: what failed, cut to a few
    hundred characters (a repr of a token list runs to megabytes), and the file that holds
    the whole traceback, redacted like everything loom-sim writes."""
    saved = _save_traceback(raised)
    where = f"its traceback is in {saved} (or " if saved else "("
    return (
        f"internal error ({describe(first, limit=MESSAGE_LIMIT)}); this is a loom-sim bug — "
        f"{where}rerun with LOOM_SIM_DEBUG=1 to see it here); please report it"
    )


def _save_traceback(exc: BaseException) -> str | None:
    """Write ``exc``'s traceback under the cache folder (``$XDG_CACHE_HOME/loom-sim/errors``);
    its path, or None when it cannot be written (the message then says how to see it)."""
    import traceback
    from datetime import UTC, datetime
    from pathlib import Path

    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = Path(base) / "loom-sim" / "errors" / f"{stamp}-{os.getpid()}.txt"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(traceback.format_exception(exc))
        path.write_text(redact(f"loom-sim {' '.join(sys.argv[1:])}\n\n{text}"), "utf-8")
    except OSError:
        return None
    return str(path)


def _leaves(group: BaseExceptionGroup):
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


@click.group(cls=LoomGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="loom-sim", prog_name="loom-sim")
def cli() -> None:
    """Faithful long-horizon persona simulation with LLMs."""
    _show_notes()


class _Notes(logging.Handler):
    """loom-sim's log lines (what loaded and in how long; a fallback taken) as plain lines on
    stderr, wherever stderr is at the time (a live progress table prints them above itself)."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(self.format(record), err=True)


def _show_notes() -> None:
    logger = logging.getLogger("loom_sim")
    if not any(isinstance(h, _Notes) for h in logger.handlers):
        logger.addHandler(_Notes())
        logger.setLevel(logging.INFO)


def main() -> None:
    sigterm_as_ctrl_c()
    cli(prog_name="loom-sim")
