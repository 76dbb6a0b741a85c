"""The viewer in a real browser: `loom-sim serve` on 127.0.0.1 and Debian's chromium, headless.
Every page of a finished run and a live one is loaded; the test reads the rendered DOM (turns
shown, scores shown), requires no console error, and saves a screenshot of each page under
tests/artifacts/ (not committed)."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from browser import Browser, available, free_port, wait_for
from test_web import cut_to_live
from workbench_runs import ROLLOUTS, TURNS, make_matrix, make_single

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not available(), reason="chromium and chromedriver: run scripts/install-test-deps"
    ),
]

ARTIFACTS = Path(__file__).parent / "artifacts"
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
ARM = "matrix/mania_patient--scripted-varied"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("work")
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(make_matrix(work), root / "matrix")
    shutil.copytree(make_single(work, "scripted/varied", "single"), root / "single")
    return root


@pytest.fixture(scope="module")
def server(root):
    port = free_port()
    proc = subprocess.Popen(
        [str(LOOM_SIM), "serve", str(root), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(url + "/")
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser():
    with Browser.start() as b:
        yield b


def check(browser: Browser, name: str) -> None:
    browser.screenshot(ARTIFACTS / f"viewer-{name}.png")
    assert browser.console_errors() == [], name


def test_the_runs_page(browser, server):
    browser.open(server + "/")
    paths = browser.js("return [...document.querySelectorAll('tr.run')].map(r => r.dataset.path)")
    assert sorted(paths) == ["matrix", "single"]
    assert browser.js("return document.querySelectorAll('input[name=run]').length") == 2
    check(browser, "runs")


def test_a_matrix_run_with_its_comparison(browser, server):
    browser.open(f"{server}/run/matrix")
    assert browser.js("return document.querySelectorAll('tr.rollout').length") == 2 * ROLLOUTS
    headers = browser.js(
        "return [...document.querySelectorAll('table.compare-table th')].map(th => th.innerText)"
    )
    assert "scripted/varied" in headers and "scripted/paraphrase" in headers
    # The per-turn curves are drawn: one line per target, with a real size on screen.
    drawn = browser.js(
        "return [...document.querySelectorAll('svg.chart polyline.curve')]"
        ".filter(p => p.getBoundingClientRect().width > 10).length"
    )
    assert drawn >= 2
    check(browser, "matrix")
    browser.screenshot(ARTIFACTS / "viewer-matrix-full.png", full_page=True)


def test_a_single_run_with_its_report(browser, server):
    browser.open(f"{server}/run/single")
    assert browser.js("return document.querySelectorAll('tr.rollout').length") == ROLLOUTS
    # The report's frame loads and is sized to its content.
    browser.wait_until(
        "const f = document.querySelector('iframe.report');"
        "return f && f.contentDocument && f.contentDocument.readyState === 'complete'"
        " && f.contentDocument.querySelector('h1') !== null"
    )
    browser.wait_until("return document.querySelector('iframe.report').offsetHeight > 700")
    check(browser, "single")


def test_a_rollout_shows_turns_and_scores(browser, server):
    browser.open(f"{server}/rollout/{ARM}/rollout_000")
    assert browser.js("return document.querySelectorAll('section.turn').length") == TURNS
    persona = browser.js(
        "return [...document.querySelectorAll('.said.persona p')].map(p => p.innerText)"
    )
    assert len(persona) == TURNS and all(len(text) > 20 for text in persona)
    # Each turn's scores are folded to one line; opened, the table shows every score.
    browser.js("document.querySelectorAll('details.turn-scores').forEach(d => d.open = true)")
    scores = browser.js(
        "return [...document.querySelectorAll('tr.score-row')]"
        ".map(r => [r.dataset.scorer, r.querySelector('td.score').innerText])"
    )
    scorers = {name for name, _ in scores}
    assert {"persona_adherence", "naturalness", "reply_length", "mirrors"} <= scorers
    values = {value for name, value in scores if name == "reply_length"}
    assert {"n/a", "failed"} <= values and any(v[0].isdigit() for v in values)
    # A turn's scaffolding opens on a click and shows the prompt the persona was given.
    assert browser.js("return document.querySelector('pre.prompt').checkVisibility()") is False
    browser.js("document.querySelector('details.scaffolding summary').click()")
    assert browser.js("return document.querySelector('pre.prompt').checkVisibility()") is True
    assert "MUST DO" in browser.js("return document.querySelector('pre.prompt').innerText")
    check(browser, "rollout")


def test_the_compare_page(browser, server):
    browser.open(f"{server}/compare?run=matrix&run=single&rate=mirrors>=1")
    rows = browser.js(
        "return [...document.querySelectorAll('table.compare-table tr')]"
        ".map(r => r.dataset.scorer).filter(Boolean)"
    )
    assert "reply_length" in rows and "rate mirrors>=1" in rows
    sentences = browser.js("return document.querySelectorAll('ul.sentences li').length")
    assert sentences > 0
    check(browser, "compare")


def test_a_live_run_updates_itself(browser, server, root):
    """A run still going: its page and its rollout's page follow it over server-sent events,
    turn by turn, until it is done."""
    live = root / "live"
    shutil.copytree(root / "single", live)
    done = (root / "single" / "rollout_001" / "transcript.json").read_bytes()
    rest = cut_to_live(live)
    turns = live / "rollout_001" / "turns.jsonl"
    planned = ROLLOUTS * TURNS
    finished = planned - len(rest)

    browser.open(f"{server}/run/live")
    browser.wait_until("return document.body.dataset.live === 'listening'")
    assert browser.js("return document.getElementById('live-turns').innerText") == str(finished)
    with turns.open("ab") as fh:
        fh.write(rest[0])
    browser.wait_until(
        f"return document.getElementById('live-turns').innerText === '{finished + 1}'"
    )
    check(browser, "live-run")

    browser.open(f"{server}/rollout/live/rollout_001")
    browser.wait_until("return document.body.dataset.live === 'listening'")
    assert browser.js("return document.querySelectorAll('section.turn').length") == 2
    browser.screenshot(ARTIFACTS / "viewer-live-before.png")
    for count, line in enumerate(rest[1:], start=3):  # the rollout goes on, a turn at a time
        with turns.open("ab") as fh:
            fh.write(line)
        browser.wait_until(f"return document.querySelectorAll('section.turn').length === {count}")
    (live / "rollout_001" / "transcript.json").write_bytes(done)
    browser.wait_until("return document.body.dataset.live === 'done'")
    browser.wait_until("return document.getElementById('live-status').innerText === 'done'")
    assert browser.js("return document.querySelectorAll('section.turn').length") == TURNS
    assert int(browser.js("return document.body.dataset.updates")) >= len(rest) - 1
    check(browser, "live")


def test_the_viewer_listens_on_loopback_only(server):
    """Reached through 127.0.0.1, refused on the machine's network address."""
    port = int(server.rsplit(":", 1)[1])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # picks the outward interface; sends nothing
        except OSError:
            pytest.skip("this machine has no network interface")
        address = probe.getsockname()[0]
    if address.startswith("127.") or address == "0.0.0.0":
        pytest.skip("this machine has no address but loopback")
    with pytest.raises(OSError), socket.create_connection((address, port), timeout=2):
        pass
