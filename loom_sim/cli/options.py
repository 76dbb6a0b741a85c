"""Options shared by several commands, and choices read from the plug-in registries.

A choice among registered plug-ins (an adversary, a responder, a machine) is checked against
the registry when it is used and listed in ``--help`` when help is shown: the registry, not
the command, is the list, and reading it (loading plug-ins) waits until it is needed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from loom_sim.plugins import Registry
from loom_sim.redaction import redact

F = TypeVar("F", bound=Callable[..., Any])


class RegistryChoice(click.ParamType):
    """One of the names ``names()`` gives (a registry's, plus fixed ``extra`` words)."""

    def __init__(
        self,
        name: str,
        names: Callable[[], Sequence[str]],
        extra: Sequence[str] = (),
    ):
        self.name = name
        self._names = names
        self._extra = tuple(extra)

    @classmethod
    def of(cls, registry: Registry, extra: Sequence[str] = ()) -> RegistryChoice:
        return cls(registry.kind, registry.names, extra)

    def choices(self) -> list[str]:
        return [*self._names(), *self._extra]

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.choices()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        choices = self.choices()
        if value in choices:
            return str(value)
        self.fail(f"{value!r} is not a known {self.name}; use one of {', '.join(choices)}")


def concurrency_option(what: str, default: int | None = 4) -> Callable[[F], F]:
    return click.option(
        "--concurrency",
        "-j",
        type=click.IntRange(min=1),
        default=default,
        show_default=True,
        help=what,
    )


def timeout_option(default: float | None = 120.0) -> Callable[[F], F]:
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        default=default,
        metavar="SECONDS",
        help="Deadline for one model reply, body included (default 120); a reply that "
        "misses it fails that attempt.",
    )


def base_url_option() -> Callable[[F], F]:
    return click.option(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible server for openai/ models (else OPENAI_BASE_URL).",
    )


def allow_outside_option(what: str) -> Callable[[F], F]:
    """``--allow-outside-paths``: the files a pack or deck names may lie outside its folder.
    Off by default, since such a file is copied into the run or shown to a model."""
    return click.option(
        "--allow-outside-paths",
        "allow_outside",
        is_flag=True,
        help=f"Let the {what} name files outside its folder (absolute, `..`, symlinks out); "
        "by default they are refused, since they are copied into the run.",
    )


def parse_pairs(values: Sequence[str], flag: str, meaning: str) -> dict[str, str]:
    """``KEY=VALUE`` words (``--model ROLE=SPEC``, ``--price SPEC=IN/OUT``) as a dict, each
    part stripped; a word without both parts is one sentence naming the flag and saying how
    to write it (``meaning``: "ROLE=SPEC, e.g. judge=openai/x")."""
    from loom_sim.errors import LoomError

    found = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip() or not rest.strip():
            raise LoomError(f"{flag} {value!r}: write it as {meaning}")
        found[key.strip()] = rest.strip()
    return found


def command_again(ctx: click.Context, words: Sequence[str], keep: Sequence[str]) -> str:
    """The command line that continues this one: ``loom-sim`` and ``words``, then the options
    named in ``keep`` that were given on this command line, as given, quoted for a shell.

    A base URL or a target with credentials in it is not repeated (it would end up in logs):
    it is shown as ``URL`` or ``TARGET``, with a note saying so.
    """
    line = ["loom-sim", *words]
    note = ""
    for param in ctx.command.params:
        name = param.name
        if not isinstance(param, click.Option) or name not in keep:
            continue
        if ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params.get(name)
        flag = max(param.opts, key=len)
        if param.is_flag:
            if param.secondary_opts:  # --cache/--no-cache: say which
                line.append(param.opts[0] if value else param.secondary_opts[0])
            elif value:
                line.append(flag)
            continue
        items: Sequence[Any] = (value or ()) if param.multiple else (value,)
        for item in items:
            if name == "base_url" and _has_credentials(str(item)):
                line += [flag, "URL"]
                note = " (URL: the base URL you gave, with its credentials)"
            elif redact(str(item)) != str(item):  # a target spec with credentials in its URL
                placeholder = name.upper()
                line += [flag, placeholder]
                note = f" ({placeholder}: the {flag} you gave, with its credentials)"
            else:
                line += [flag, str(item)]
    return shlex.join(line) + note


def _has_credentials(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return True
    return bool(parts.username or parts.password or parts.query)


def cache_option() -> Callable[[F], F]:
    return click.option(
        "--cache/--no-cache",
        default=True,
        show_default=True,
        help="Serve model replies from the response cache and store new ones "
        "(loom-sim cache stats|clear).",
    )


def executor_options() -> Callable[[F], F]:
    """``--executor``, and the Ray executor's ``--address`` and ``--cpus-per-cell``."""
    from loom_sim.executors import EXECUTORS

    def decorate(command: F) -> F:
        command = click.option(
            "--cpus-per-cell",
            type=click.FloatRange(min=0.01),
            metavar="N",
            help="Ray: CPUs each rollout reserves (default 1 with an in-process model, "
            "else 0.25: four API-bound rollouts per core).",
        )(command)
        command = click.option(
            "--address",
            metavar="ADDR",
            help="Ray: the cluster to join, e.g. ray://head:10001 "
            "(default: start Ray here with this machine's cores).",
        )(command)
        return click.option(
            "--executor",
            type=RegistryChoice.of(EXECUTORS),
            default="local",
            show_default=True,
            help="Where the rollouts (and scorings) run: local (this process), processes "
            "(worker processes here, as --workers) or ray (each one a Ray task; "
            "pip install 'loom-sim[ray]').",
        )(command)

    return decorate


AUTO_WORKERS = 0  # --workers auto: the executor chooses
#: ``--workers``'s default when it is not given (unset: auto).
WORKERS_ENV = "LOOM_SIM_WORKERS"


class WorkersType(click.ParamType):
    """``--workers``: a number of processes, or ``auto`` (:data:`AUTO_WORKERS`: the executor
    chooses from the machine and the run's models)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            count = value
        elif str(value).strip().lower() == "auto":
            return AUTO_WORKERS
        else:
            try:
                count = int(str(value).strip())
            except ValueError:
                count = 0
        if count < 1:
            source = ctx.get_parameter_source(param.name) if ctx and param else None
            where = f" (from {WORKERS_ENV})" if source is ParameterSource.ENVIRONMENT else ""
            self.fail(f"{value!r}{where}: give 1 or more worker processes, or auto", param, ctx)
        return count


def workers_option() -> Callable[[F], F]:
    return click.option(
        "--workers",
        type=WorkersType(),
        envvar=WORKERS_ENV,
        metavar="N|auto",
        help="Worker processes on this machine the rollouts are split over, each with its own "
        f"event loop and models (default ${WORKERS_ENV}, else auto: one per core, fewer with "
        "an in-process model where memory is short or scripted models with few rollouts; "
        "1: this process).",
    )


def chosen_executor(
    name: str, address: str | None, cpus_per_cell: float | None, workers: int | None = None
):
    """The executor the options name, opened (a missing Ray is one sentence, here).
    ``workers`` (``--workers``; None: not given) above 1, or auto, makes the local executor
    the ``processes`` one."""
    from loom_sim.errors import LoomError
    from loom_sim.executors import ExecutorSettings, open_executor

    if name in ("local", "processes") and (address or cpus_per_cell):
        flag = "--address" if address else "--cpus-per-cell"
        raise LoomError(f"{flag} is for a cluster: add --executor ray")
    if name == "ray" and workers not in (None, AUTO_WORKERS):
        raise LoomError(
            f"--workers (or {WORKERS_ENV}) is for this machine's processes; on Ray, "
            "--cpus-per-cell decides how many rollouts share a core"
        )
    if name == "local" and workers is not None and workers != 1:
        name = "processes"
    count = None if workers in (None, AUTO_WORKERS) else workers
    return open_executor(name, ExecutorSettings(address, cpus_per_cell, count))


#: The one spelling of "print it for a program": every command that has a machine-readable form.
JSON_FLAG = "--json"


def json_format(fmt: str, as_json: bool, old: str) -> bool:
    """Whether the machine-readable form was asked for, by ``--json`` or by the older
    ``--format OLD`` spelling, which still works and says, in one line on stderr, what to
    type instead (scripts keep running; their authors see the new spelling)."""
    if fmt == old:
        click.echo(f"note: --format {old} is now {JSON_FLAG}", err=True)
        return True
    return as_json
