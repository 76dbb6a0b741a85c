"""The web viewer against its ASGI app (httpx): every page, the server-sent events of a
finished and of a live run, model text escaped, and no path outside the results folder."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import httpx
import pytest
import trio
from workbench_runs import FAILS_AT, ROLLOUTS, TURNS, make_matrix, make_single

from loom_sim.web.app import create_app
from loom_sim.web.live import token

ARM = "matrix/mania_patient--scripted-varied"
INJECTED = "<script>alert('persona')</script>"


def cut_to_live(run: Path, keep: int = 1) -> list[bytes]:
    """Make ``run``'s rollout_001 look like it is still going: its first ``keep`` turns and
    no transcript. Returns the turn lines taken away, to write back as it "goes on"."""
    rollout = run / "rollout_001"
    (rollout / "transcript.json").unlink()
    lines = (rollout / "turns.jsonl").read_bytes().splitlines(keepends=True)
    (rollout / "turns.jsonl").write_bytes(b"".join(lines[:keep]))
    return lines[keep:]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(make_matrix(work), root / "matrix")
    single = make_single(work, "scripted/varied", "single")
    shutil.copytree(single, root / "single")
    # Model text is untrusted: a persona message with markup in it.
    path = root / "single" / "rollout_000" / "transcript.json"
    transcript = json.loads(path.read_text())
    transcript["turns"][1]["persona"] = INJECTED
    path.write_text(json.dumps(transcript))
    # A run next to the results folder, and a link to it from inside: neither is served.
    shutil.copytree(single, root.parent / "outside-run")
    os.symlink(root.parent / "outside-run", root / "link-out")
    return {"root": root, "single": single, "work": work}


@pytest.fixture
async def client(site):
    app = create_app(site["root"], poll_s=0.05, lifetime=20)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http


PAGES = [
    "/",
    "/?status=complete&target=paraphrase",
    "/run/matrix",
    f"/run/{ARM}",
    "/report/matrix",
    f"/report/{ARM}",
    f"/rollout/{ARM}/rollout_000",
    "/run/single",
    "/report/single",
    "/rollout/single/rollout_000",
    "/compare?run=matrix",
    "/compare?run=single&run=matrix&rate=mirrors>=1",
    "/static/viewer.css",
    "/static/viewer.js",
    "/static/compare.css",
]


@pytest.mark.parametrize("page", PAGES)
async def test_every_page_is_served_with_its_guards(client, page):
    reply = await client.get(page)
    assert reply.status_code == 200, reply.text[:300]
    csp = reply.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert reply.headers["x-content-type-options"] == "nosniff"
    if reply.headers["content-type"].startswith("text/html"):
        # Nothing is fetched from anywhere else: no CDN, no fonts, no remote script.
        assert "//cdn" not in reply.text and "https://" not in reply.text
        assert "Traceback" not in reply.text


async def test_the_runs_page_lists_and_filters(client):
    page = (await client.get("/")).text
    assert 'data-path="matrix"' in page and 'data-path="single"' in page
    assert 'data-path="link-out"' not in page  # the link leads outside: not a run here
    only = (await client.get("/?target=paraphrase")).text
    assert 'data-path="matrix"' in only and 'data-path="single"' not in only


async def test_a_rollout_reads_as_a_conversation_with_every_score(client, site):
    page = (await client.get(f"/rollout/{ARM}/rollout_000")).text
    transcript = json.loads((site["root"] / ARM / "rollout_000" / "transcript.json").read_text())
    assert page.count('<section class="turn"') == TURNS
    for turn in transcript["turns"]:
        assert _html(turn["persona"]) in page and _html(turn["interlocutor"]) in page
    assert "MUST DO" in page  # the scaffolding prompt of a full-injection turn
    for scorer in ("persona_adherence", "naturalness", "reply_length", "mirrors"):
        assert f'data-scorer="{scorer}"' in page
    assert page.count('class="score-row state-not_applicable"') >= 1  # turn 0
    assert page.count('class="score-row state-failed"') >= 1  # turn FAILS_AT
    assert "judge reply did not parse" in page
    assert "the reply has" in page  # a scorer's reasoning, in full
    assert FAILS_AT < TURNS


async def test_model_text_is_escaped(client):
    page = (await client.get("/rollout/single/rollout_000")).text
    assert INJECTED not in page
    assert "&lt;script&gt;alert(&#39;persona&#39;)&lt;/script&gt;" in page


async def test_a_matrix_page_compares_its_targets(client):
    page = (await client.get("/run/matrix")).text
    assert "scripted/varied" in page and "scripted/paraphrase" in page
    assert 'class="compare-table"' in page and "beyond noise" in page
    assert page.count('class="rollout status-done"') == 2 * ROLLOUTS
    report = (await client.get("/report/matrix")).text
    assert report.count('class="curve"') >= 2


async def test_a_finished_run_streams_its_status_then_ends(client):
    reply = await client.get("/events/matrix")
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = _events(reply.text)
    assert [name for name, _ in events] == ["status", "done"]
    assert events[-1][1] == {
        "status": "complete",
        "turns": 2 * ROLLOUTS * TURNS,
        "done": 2 * ROLLOUTS,
        "cells": 2 * ROLLOUTS,
    }


async def test_a_change_since_the_page_was_made_is_sent_at_once(client, site):
    """The page names the state it shows; a stream opened after the run moved on says so
    first thing, so no turn written between the two is missed."""
    current = token(site["root"] / "single")
    fresh = _events((await client.get(f"/events/single?since={current}")).text)
    stale = _events((await client.get("/events/single?since=0123456789abcdef")).text)
    assert [name for name, _ in fresh] == ["status", "done"]
    assert [name for name, _ in stale] == ["status", "update", "done"]


async def test_a_live_run_streams_each_change_until_it_is_done(site):
    root = site["root"]
    live = root / "live"
    shutil.copytree(site["single"], live)
    rest = cut_to_live(live)
    app = create_app(root, poll_s=0.05, lifetime=20)
    transport = httpx.ASGITransport(app=app)
    got: dict = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        page = await http.get("/rollout/live/rollout_001")
        assert 'data-live="/events/live?since=' in page.text
        assert page.text.count('<section class="turn"') == 1

        async def listen():
            got["reply"] = await http.get("/events/live")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen)
            for line in rest:  # the rollout goes on, a turn at a time
                await trio.sleep(0.3)
                with (live / "rollout_001" / "turns.jsonl").open("ab") as fh:
                    fh.write(line)
            await trio.sleep(0.3)
            shutil.copy(site["single"] / "rollout_001" / "transcript.json", live / "rollout_001")
        after = await http.get("/rollout/live/rollout_001")
    events = _events(got["reply"].text)
    names = [name for name, _ in events]
    assert names[0] == "status" and events[0][1]["status"] == "partial"
    # How many changes one poll sees at once is the scheduler's business: a loaded machine can
    # fold two appended turns into one update. What is determined: updates, in order, the last
    # with every turn, then done.
    assert names.count("update") >= 1 and names[-1] == "done"
    turns = [data["turns"] for name, data in events if name == "update"]
    assert turns == sorted(turns) and turns[-1] == ROLLOUTS * TURNS
    assert events[-1][1]["status"] == "complete"
    assert after.text.count('<section class="turn"') == TURNS
    assert "data-live" not in after.text
    shutil.rmtree(live)


TRAVERSALS = [
    "/run/../../etc",
    "/run/%2e%2e/%2e%2e/etc",
    "/run/..%2F..%2Fetc",
    "/run/%2Fetc",
    "/run//etc",
    "/run/link-out",
    "/run/..%2Foutside-run",
    "/report/..%2Foutside-run",
    "/rollout/..%2Foutside-run%2Frollout_000",
    "/rollout/link-out/rollout_000",
    "/events/..%2Foutside-run",
    "/events/link-out",
    "/compare?run=..%2Foutside-run",
    "/compare?run=link-out",
    "/static/..%2Fapp.py",
    "/static/%2E%2E%2Fpaths.py",
    "/run/single%00",
    "/run/single\\..\\..",
]


@pytest.mark.parametrize("attempt", TRAVERSALS)
async def test_nothing_outside_the_results_folder_is_served(client, attempt):
    reply = await client.get(attempt)
    assert reply.status_code == 404, (attempt, reply.status_code)
    assert "Marcus" not in reply.text  # no transcript or config text leaked


async def test_it_is_read_only(client):
    for method in ("POST", "PUT", "DELETE"):
        reply = await client.request(method, "/run/single")
        assert reply.status_code == 405


async def test_an_unknown_run_is_a_plain_not_found(client):
    reply = await client.get("/run/nope")
    assert reply.status_code == 404 and "Nothing to show at &#39;nope&#39;" in reply.text


def _html(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def _events(body: str) -> list[tuple[str, dict]]:
    found = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def test_serve_says_plainly_what_stops_it(tmp_path):
    from click.testing import CliRunner

    from loom_sim.cli import cli

    missing = CliRunner().invoke(cli, ["serve", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "no such results folder" in missing.stderr
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        busy = CliRunner().invoke(cli, ["serve", str(tmp_path), "--port", str(port)])
    assert busy.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert "Traceback" not in busy.output
