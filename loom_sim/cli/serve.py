"""``loom-sim serve [RESULTS_DIR]``: browse runs in a browser, read-only, on 127.0.0.1.

The viewer (:mod:`loom_sim.web`) is a starlette app served by uvicorn. It listens on the
loopback interface unless told otherwise, writes nothing, and serves only files under
RESULTS_DIR.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import click

from loom_sim.errors import LoomError


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
    app = create_app(results_dir)
    click.echo(f"serving {results_dir.resolve()} at http://{host}:{port}/ (Ctrl-C stops)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
