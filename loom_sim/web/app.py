"""The viewer as an ASGI app: ``create_app(results_dir)``, served by ``loom-sim serve``.

Routes (GET only; anything else is 405):

| path | page |
| --- | --- |
| ``/`` | the runs, newest first, filterable; pick some to compare |
| ``/run/<path>`` | a run: its rollouts and report (a matrix: its arms and comparison) |
| ``/report/<path>`` | a single run's report.html, made from the files as they are now |
| ``/rollout/<path>`` | a rollout as a conversation: scaffolding, messages, monitors, scores |
| ``/compare?run=<path>&run=<path>`` | runs compared, one column per target |
| ``/pair?a=<path>&b=<path>`` | two rollouts of the same config and seed side by side |
| ``/events/<path>`` | server-sent events while the run at ``<path>`` is going |
| ``/static/...`` | the viewer's CSS and its one small script |

``<path>`` is relative to the results folder and resolved by :class:`~.paths.Resolver`: a
path leading outside it is "not found" like any other. Nothing is fetched from anywhere else
(no CDN, no fonts), and the Content-Security-Policy says so to the browser too.

A request whose ``Host`` is not one of ``hosts`` (by default the loopback names) is refused:
a page elsewhere that points a name of its own at 127.0.0.1 (DNS rebinding) cannot read the
runs through the browser. Every page's work — reading the disk, rendering — runs in a worker
thread, a few at a time, so a large run or rollout never holds up the other requests, the
static files or a signal to stop.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import cache, partial
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from loom_sim import __version__
from loom_sim.core.html import html_environment
from loom_sim.errors import LoomError
from loom_sim.store.matrix_file import is_matrix
from loom_sim.web.live import events
from loom_sim.web.pages import Filters, compare_page, grade, rollout_page, run_page, runs_page
from loom_sim.web.paired import paired_page
from loom_sim.web.paths import NotFound, Resolver

__all__ = ["LOOPBACK_HOSTS", "create_app"]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WORKERS = 4  # pages rendered at once; more wait their turn, off the event loop

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; frame-src 'self'; connect-src 'self'; "
        "frame-ancestors 'self'; form-action 'self'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",  # a run changes while it runs
}
STATIC = {"viewer.css": "text/css", "viewer.js": "text/javascript"}


def _num(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _cost(value) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _url(path: str) -> str:
    """A path of the results folder as it goes in a link: ``#``, ``?``, ``%`` and spaces in a
    folder's name are encoded, so the link leads to that folder."""
    return quote(path, safe="/")


def _page_number(request: Request) -> int:
    text = request.query_params.get("page", "1")
    return int(text) if text.isascii() and text.isdigit() and len(text) < 9 else 1


def _host(header: str) -> str:
    """The name in a ``Host`` header, without its port (``[::1]:8765`` -> ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@cache
def _environment() -> jinja2.Environment:
    return html_environment(
        "loom_sim.web",
        filters={"num": _num, "cost": _cost, "grade": grade, "url": _url},
        globals={"version": __version__},
    )


@cache
def _static(name: str) -> bytes:
    if name == "compare.css":
        from loom_sim.compare.html import stylesheet

        return stylesheet().encode()
    return (resources.files("loom_sim.web") / "static" / name).read_bytes()


def _page(template: str, code: int = 200, **context) -> HTMLResponse:
    html = _environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=code, headers=SECURITY_HEADERS)


def create_app(
    results_dir: Path | str,
    *,
    poll_s: float = 1.0,
    lifetime: float = 600.0,
    hosts: Collection[str] | None = LOOPBACK_HOSTS,
):
    """The viewer of ``results_dir``; ``poll_s`` and ``lifetime`` pace the live streams;
    ``hosts`` are the names a request may be addressed to (None: any, for a server listening
    on every interface)."""
    resolver = Resolver(Path(results_dir))
    allowed = None if hosts is None else {h.lower().strip("[]") for h in hosts}
    limiter: list[anyio.CapacityLimiter] = []

    async def off_loop(work: Callable[[], Any]) -> Any:
        if not limiter:
            limiter.append(anyio.CapacityLimiter(WORKERS))
        return await anyio.to_thread.run_sync(work, limiter=limiter[0], abandon_on_cancel=True)

    async def home(request: Request) -> Response:
        q = request.query_params
        filters = Filters(q.get("config", ""), q.get("target", ""), q.get("status", ""))
        return await off_loop(lambda: _page("runs.html.j2", **runs_page(resolver, filters)))

    async def run(request: Request) -> Response:
        path, page = request.path_params["path"], _page_number(request)
        return await off_loop(lambda: _page("run.html.j2", **run_page(resolver, path, page)))

    async def report(request: Request) -> Response:
        return await off_loop(partial(_report, resolver, request.path_params["path"]))

    async def rollout(request: Request) -> Response:
        path, page = request.path_params["path"], _page_number(request)
        return await off_loop(
            lambda: _page("rollout.html.j2", **rollout_page(resolver, path, page))
        )

    async def compare(request: Request) -> Response:
        rels = request.query_params.getlist("run")
        if not rels:
            return _page(
                "error.html.j2", 400, title="Nothing to compare",
                message="Pick one or more runs on the runs page to compare them.",
            )  # fmt: skip
        rates = request.query_params.getlist("rate")
        return await off_loop(
            lambda: _page("compare.html.j2", **compare_page(resolver, rels, rates))
        )

    async def pair(request: Request) -> Response:
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if not a or not b:
            return _page(
                "error.html.j2", 400, title="Nothing to pair",
                message="The paired view needs two rollouts: /pair?a=ROLLOUT&b=ROLLOUT "
                "(a matrix's run page links each rollout to its pair).",
            )  # fmt: skip
        return await off_loop(lambda: _page("pair.html.j2", **paired_page(resolver, a, b)))

    async def stream(request: Request) -> Response:
        run_dir = await off_loop(partial(resolver.run_dir, request.path_params["path"]))
        since = request.query_params.get("since")
        return StreamingResponse(
            events(run_dir, since=since, poll_s=poll_s, lifetime=lifetime, off_loop=off_loop),
            media_type="text/event-stream",
            headers={**SECURITY_HEADERS, "x-accel-buffering": "no"},
        )

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in (*STATIC, "compare.css"):
            return PlainTextResponse("not found", status_code=404, headers=SECURITY_HEADERS)
        media = STATIC.get(name, "text/css")
        return Response(_static(name), media_type=media, headers=SECURITY_HEADERS)

    routes = [
        Route("/", home),
        Route("/run/{path:path}", run),
        Route("/report/{path:path}", report),
        Route("/rollout/{path:path}", rollout),
        Route("/compare", compare),
        Route("/pair", pair),
        Route("/events/{path:path}", stream),
        Route("/static/{name}", static),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            NotFound: _nothing_there,
            LoomError: _unreadable,
            Exception: _broken,
        },
    )
    app.state.resolver = resolver
    if allowed is None:
        return app

    async def guarded(scope, receive, send) -> None:
        """Refuse a request addressed to a name this server was not started for."""
        if scope["type"] == "http":
            header = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1")
            if _host(header) not in allowed:
                refused = _page(
                    "error.html.j2", 400, title="Unknown host",
                    message="This viewer answers only requests addressed to "
                    + ", ".join(sorted(allowed)) + " (loom-sim serve --host sets it).",
                )  # fmt: skip
                await refused(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def _report(resolver: Resolver, rel: str) -> Response:
    from loom_sim.rollout.report.data import build_report
    from loom_sim.rollout.report.html import render_html

    run_dir = resolver.run_dir(rel)
    if is_matrix(run_dir):  # a matrix's report is its comparison
        from loom_sim.compare import build_compare
        from loom_sim.compare.html import render_html as render_compare

        html = render_compare(build_compare([run_dir]), f"Matrix run {run_dir.name}")
    else:
        html = render_html(build_report(run_dir))
    return HTMLResponse(html, headers=SECURITY_HEADERS)


async def _nothing_there(request: Request, exc: Exception) -> Response:
    """Outside the results folder, or not a run: the same answer, which reveals nothing."""
    return _page(
        "error.html.j2", 404, title="Not found",
        message=f"Nothing to show at {str(exc)!r} in this results folder.",
    )  # fmt: skip


async def _unreadable(request: Request, exc: Exception) -> Response:
    """A run that is there but cannot be shown (not scored yet, a damaged file): its reason."""
    return _page("error.html.j2", 422, title="Cannot show this", message=str(exc))


async def _broken(request: Request, exc: Exception) -> Response:
    """Anything else: a plain page with the same guards, never a traceback."""
    return _page(
        "error.html.j2", 500, title="Cannot show this",
        message=f"This page could not be made ({type(exc).__name__}).",
    )  # fmt: skip
