"""``loom-sim serve [RESULTS_DIR]``: browse runs in a browser, read-only, on 127.0.0.1.

The viewer (:mod:`loom_sim.web`) is a starlette app served by uvicorn. It listens on the
loopback interface unless told otherwise, answers only requests addressed to a loopback name
(or to the ``--host`` given), writes nothing, and serves only files under RESULTS_DIR.

Stopping (Ctrl-C or SIGTERM) waits a moment for requests in flight, then ends the process at
once: a page still being made in a worker thread is abandoned, which loses nothing because
the viewer writes nothing.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import click

from loom_sim.errors import LoomError

STOP_WITHIN_S = 2  # requests in flight are given this long when the server is told to stop


def _names(host: str) -> frozenset[str] | None:
    """The ``Host`` names the viewer answers: the loopback names, and ``host`` when it is a
    name or address of its own; None (any) when it listens on every interface."""
    from loom_sim.web.app import LOOPBACK_HOSTS

    if host in ("0.0.0.0", "::", ""):
        return None
    return LOOPBACK_HOSTS | {host.lower().strip("[]")}


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command()
@click.argument(
    "results_dir",
    metavar="[RESULTS_DIR]",
    required=False,
    default="results",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on; anything but loopback shows your runs to the network.",
)
def serve(results_dir: Path, port: int, host: str) -> None:
    """Browse the runs in RESULTS_DIR (default ./results) in a web browser: the runs list, each
    run's report (live while it runs), each rollout as a conversation with its scaffolding,
    monitors and scores, and the comparison of runs. Read-only; Ctrl-C stops it."""
    import uvicorn

    from loom_sim.web.app import create_app

    if not results_dir.is_dir():
        raise LoomError(f"{results_dir}: no such results folder (give the folder holding runs)")
    if not _loopback(host):
        click.echo(
            f"note: listening on {host}: anyone who can reach this machine can read these runs",
            err=True,
        )
    try:  # a port taken is one sentence here, not a server's log line
        with socket.create_server((host, port)):
            pass
    except OSError as err:
        raise LoomError(
            f"cannot listen on {host}:{port} ({err.strerror or err}); choose another --port"
        ) from None
    app = create_app(results_dir, hosts=_names(host))
    click.echo(f"serving {results_dir.resolve()} at http://{host}:{port}/ (Ctrl-C stops)", err=True)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=STOP_WITHIN_S,
        )
    except KeyboardInterrupt:  # the signal uvicorn stopped on, raised again once it stopped
        pass
    click.echo("stopped", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # not waiting on a worker thread still making an abandoned page
