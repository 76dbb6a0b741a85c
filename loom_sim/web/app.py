"""The viewer as an ASGI app: ``create_app(results_dir)``, served by ``loom-sim serve``.

Routes (GET only; anything else is 405):

| path | page |
| --- | --- |
| ``/`` | the runs, newest first, filterable; pick some to compare |
| ``/run/<path>`` | a run: its rollouts and report (a matrix: its arms and comparison) |
| ``/report/<path>`` | a single run's report.html, made from the files as they are now |
| ``/rollout/<path>`` | a rollout as a conversation: scaffolding, messages, monitors, scores |
| ``/compare?run=<path>&run=<path>`` | runs compared, one column per target |
| ``/events/<path>`` | server-sent events while the run at ``<path>`` is going |
| ``/static/...`` | the viewer's CSS and its one small script |

``<path>`` is relative to the results folder and resolved by :class:`~.paths.Resolver`: a
path leading outside it is "not found" like any other. Nothing is fetched from anywhere else
(no CDN, no fonts), and the Content-Security-Policy says so to the browser too.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from loom_sim import __version__
from loom_sim.errors import LoomError
from loom_sim.store.matrix_file import is_matrix
from loom_sim.web.live import events
from loom_sim.web.pages import Filters, compare_page, grade, rollout_page, run_page, runs_page
from loom_sim.web.paths import NotFound, Resolver

__all__ = ["create_app"]

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


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("loom_sim.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, cost=_cost, grade=grade)
    env.globals["version"] = __version__
    return env


@cache
def _static(name: str) -> bytes:
    if name == "compare.css":
        from loom_sim.compare.html import stylesheet

        return stylesheet().encode()
    return (resources.files("loom_sim.web") / "static" / name).read_bytes()


def _page(template: str, code: int = 200, **context) -> HTMLResponse:
    html = _environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=code, headers=SECURITY_HEADERS)


def create_app(results_dir: Path | str, *, poll_s: float = 1.0, lifetime: float = 600.0):
    """The viewer of ``results_dir``; ``poll_s`` and ``lifetime`` pace the live streams."""
    resolver = Resolver(Path(results_dir))

    async def home(request: Request) -> Response:
        q = request.query_params
        filters = Filters(q.get("config", ""), q.get("target", ""), q.get("status", ""))
        return _page("runs.html.j2", **runs_page(resolver, filters))

    async def run(request: Request) -> Response:
        return _page("run.html.j2", **run_page(resolver, request.path_params["path"]))

    async def report(request: Request) -> Response:
        from loom_sim.rollout.report.data import build_report
        from loom_sim.rollout.report.html import render_html

        run_dir = resolver.run_dir(request.path_params["path"])
        if is_matrix(run_dir):  # a matrix's report is its comparison
            from loom_sim.compare import build_compare
            from loom_sim.compare.html import render_html as render_compare

            html = render_compare(build_compare([run_dir]), f"Matrix run {run_dir.name}")
        else:
            html = render_html(build_report(run_dir))
        return HTMLResponse(html, headers=SECURITY_HEADERS)

    async def rollout(request: Request) -> Response:
        return _page("rollout.html.j2", **rollout_page(resolver, request.path_params["path"]))

    async def compare(request: Request) -> Response:
        rels = request.query_params.getlist("run")
        if not rels:
            return _page(
                "error.html.j2", 400, title="Nothing to compare",
                message="Pick one or more runs on the runs page to compare them.",
            )  # fmt: skip
        context = compare_page(resolver, rels, request.query_params.getlist("rate"))
        return _page("compare.html.j2", **context)

    async def stream(request: Request) -> Response:
        run_dir = resolver.run_dir(request.path_params["path"])
        since = request.query_params.get("since")
        return StreamingResponse(
            events(run_dir, since=since, poll_s=poll_s, lifetime=lifetime),
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
        Route("/events/{path:path}", stream),
        Route("/static/{name}", static),
    ]
    app = Starlette(
        routes=routes, exception_handlers={NotFound: _nothing_there, LoomError: _unreadable}
    )
    app.state.resolver = resolver
    return app


async def _nothing_there(request: Request, exc: Exception) -> Response:
    """Outside the results folder, or not a run: the same answer, which reveals nothing."""
    return _page(
        "error.html.j2", 404, title="Not found",
        message=f"Nothing to show at {str(exc)!r} in this results folder.",
    )  # fmt: skip


async def _unreadable(request: Request, exc: Exception) -> Response:
    """A run that is there but cannot be shown (not scored yet, a damaged file): its reason."""
    return _page("error.html.j2", 422, title="Cannot show this", message=str(exc))
