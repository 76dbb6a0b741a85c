"""The ``loom-sim`` command line.

One error boundary for every command: a :class:`~loom_sim.errors.LoomError` is the user's to fix
and is printed as plain lines; anything else is loom-sim's bug and is reported as such in one
line (``LOOM_SIM_DEBUG=1`` shows the traceback). Nobody sees a traceback by accident.
"""

from __future__ import annotations

import logging
import os
import sys

import click

from loom_sim import __version__
from loom_sim.errors import LoomError


class _UserError(click.ClickException):
    def show(self, file=None) -> None:
        click.echo(self.format_message(), err=True)


class LoomGroup(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except LoomError as err:
            raise _UserError(str(err)) from None
        except BaseExceptionGroup as group:
            # Concurrent tasks (rollouts, scorers) fail together: if every failure is one the
            # user can act on, show each of them; otherwise it is a bug, reported below.
            matched, rest = group.split(LoomError)
            if matched is not None and rest is None:
                messages = dict.fromkeys(str(e) for e in _leaves(matched))
                raise _UserError("\n".join(messages)) from None
            if os.environ.get("LOOM_SIM_DEBUG"):
                raise
            first = next(iter(_leaves(group)))
            raise _UserError(
                f"internal error ({type(first).__name__}: {first}); this is a loom-sim bug — "
                "rerun with LOOM_SIM_DEBUG=1 for the traceback and report it"
            ) from None
        except KeyboardInterrupt:
            raise click.Abort() from None
        except BrokenPipeError:
            # `loom-sim dry-run ... | head`: the reader left; that is not an error.
            sys.stdout = open(os.devnull, "w")
            raise click.exceptions.Exit(0) from None
        except Exception as err:
            if os.environ.get("LOOM_SIM_DEBUG"):
                raise
            raise _UserError(
                f"internal error ({type(err).__name__}: {err}); this is a loom-sim bug — "
                "rerun with LOOM_SIM_DEBUG=1 for the traceback and report it"
            ) from None


def _leaves(group: BaseExceptionGroup):
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


@click.group(cls=LoomGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="loom-sim")
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


def _register() -> None:
    from loom_sim.cli import (
        dry_run,
        imports,
        inspect,
        plugins,
        port,
        probe,
        report,
        run,
        schema,
        score,
        signals,
        validate,
        view,
    )

    cli.add_command(validate.validate)
    cli.add_command(schema.schema)
    cli.add_command(dry_run.dry_run)
    cli.add_command(run.run)
    cli.add_command(inspect.diagram)
    cli.add_command(inspect.trace)
    cli.add_command(signals.signals)
    cli.add_command(report.report)
    cli.add_command(view.view)
    cli.add_command(score.score)
    cli.add_command(imports.import_)
    cli.add_command(port.port)
    cli.add_command(probe.probe)
    cli.add_command(plugins.plugins)


_register()


def main() -> None:
    cli(prog_name="loom-sim")
