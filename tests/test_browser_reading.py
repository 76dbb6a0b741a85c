"""The rollout page and the paired view as a researcher reads them, in headless chromium.

`loom-sim serve` on 127.0.0.1 over real scripted runs: a matrix of two targets (the paired
view's pairs) and a single run whose target replies are capped at 30 tokens, so the scripted
model cuts some of them off (its finish reason is then "length"). The tests read the rendered
DOM: turns counted from 1, no raw JSON or unrounded float anywhere on the page, a cut reply
marked as cut (exactly the turns whose record says so), the per-turn scores folded to a line,
and the paired view's two rollouts side by side. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from browser import Browser, available, free_port, wait_for
from workbench_runs import ROLLOUTS, TURNS, make_cut_run, make_matrix

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not available(), reason="chromium and chromedriver: run scripts/install-test-deps"
    ),
]

ARTIFACTS = Path(__file__).parent / "artifacts"
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
ARM_A = "matrix/mania_patient--scripted-varied"
ARM_B = "matrix/mania_patient--scripted-paraphrase"

# Everything on screen, with every fold opened (a closed <details> is not rendered text),
# less the persona's prompts: they are the config's own words, quotes and all.
PAGE_TEXT = (
    "document.querySelectorAll('details').forEach(d => d.open = true);"
    "document.querySelectorAll('pre.prompt').forEach(p => p.remove());"
    "return document.body.innerText"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("work")
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(make_matrix(work), root / "matrix")
    make_cut_run(work, root / "cut")
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


def no_raw_values(text: str) -> None:
    """No JSON object or list of lists, no float printed to 17 digits."""
    assert '{"' not in text and '[["' not in text and '": ' not in text and "[]" not in text
    assert not re.search(r"\d\.\d{5,}", text), re.search(r".{40}\d\.\d{5,}.{10}", text)


def test_the_rollout_page_counts_turns_from_1_and_shows_no_raw_json(browser, server):
    browser.open(f"{server}/rollout/{ARM_A}/rollout_000")
    numbers = browser.js(
        "return [...document.querySelectorAll('section.turn')].map(s => s.dataset.turn)"
    )
    assert numbers == [str(n) for n in range(1, TURNS + 1)]
    heads = browser.js(
        "return [...document.querySelectorAll('h2.turn-head')].map(h => h.innerText)"
    )
    assert heads[0].startswith("turn 1 ") and heads[-1].startswith(f"turn {TURNS} ")
    # The per-turn scores are folded: one line a turn, the table hidden until opened.
    assert browser.js("return document.querySelectorAll('details.turn-scores').length") == TURNS
    line = browser.js(
        "return document.querySelector('details.turn-scores > summary').getBoundingClientRect()"
        ".height"
    )
    font = browser.js(
        "return parseFloat(getComputedStyle("
        "document.querySelector('details.turn-scores > summary')).lineHeight) || 20"
    )
    assert line < 2 * font
    assert browser.js("return document.querySelector('table.scores').checkVisibility()") is False
    browser.js("document.querySelector('details.turn-scores > summary').click()")
    assert browser.js("return document.querySelector('table.scores').checkVisibility()") is True
    browser.screenshot(ARTIFACTS / "reading-rollout.png")
    # The trajectory scorer's gaps are labelled values, rounded.
    labels = browser.js(
        "return [...document.querySelectorAll("
        "'tr[data-scorer=trajectory] td.details .group > .label')].map(l => l.innerText)"
    )
    assert "gap" in labels
    text = browser.js(PAGE_TEXT)
    assert "turn 0" not in text
    no_raw_values(text)
    assert browser.console_errors() == []


def test_a_reply_cut_at_the_token_limit_is_marked(browser, server, root):
    records = [
        json.loads(line)
        for line in (root / "cut" / "rollout_000" / "turns.jsonl").read_text().splitlines()
    ]
    cut = [r["turn"] + 1 for r in records if r["finish_reasons"]["interlocutor"] == "length"]
    whole = [r["turn"] + 1 for r in records if r["finish_reasons"]["interlocutor"] == "stop"]
    assert cut and whole  # the fixture has both
    browser.open(f"{server}/rollout/cut/rollout_000")
    marked = browser.js(
        "return [...document.querySelectorAll('section.turn')]"
        ".filter(s => s.querySelector('.said.target .cut')).map(s => Number(s.dataset.turn))"
    )
    assert marked == cut
    assert browser.js(
        "const m = document.querySelector('.said.target .cut'); return m && m.checkVisibility()"
    )
    assert browser.js("return document.querySelectorAll('.said.persona .cut').length") == 0
    browser.screenshot(ARTIFACTS / "reading-cut.png")
    assert browser.console_errors() == []


def test_the_paired_view_shows_two_rollouts_side_by_side(browser, server):
    browser.open(f"{server}/run/{ARM_A.split('/')[0]}")
    browser.js("document.querySelector('tr.rollout a.pair').click()")
    browser.wait_until("return location.pathname === '/pair'")
    browser.wait_until("return document.readyState === 'complete'")
    assert browser.js("return document.querySelectorAll('section.pair-turn').length") == TURNS
    first = browser.js(
        "return [...document.querySelectorAll('section.pair-turn')].map(s => s.dataset.turn)"
    )
    assert first[0] == "1"
    sides = browser.js(
        "const s = document.querySelector('section.pair-turn .sides');"
        "return [...s.children].map(c => {const r = c.getBoundingClientRect();"
        " return {target: c.dataset.target, left: r.left, right: r.right, top: r.top,"
        " width: r.width, persona: c.querySelector('.said.persona p').innerText,"
        " reply: c.querySelector('.said.target p').innerText}})"
    )
    assert [s["target"] for s in sides] == ["scripted/varied", "scripted/paraphrase"]
    a, b = sides
    assert a["right"] <= b["left"] and abs(a["top"] - b["top"]) < 2  # side by side, one row
    assert a["width"] > 300 and b["width"] > 300
    assert a["persona"] and b["persona"] and a["reply"] != b["reply"]
    # The differences: the rollout's, and each turn's, one per scorer present on both sides.
    diffs = browser.js(
        "return [...document.querySelectorAll('table.aggregates tr[data-scorer]')]"
        ".map(r => [r.dataset.scorer, r.cells[3].innerText])"
    )
    assert dict(diffs)["mirrors"] == "+1.00"  # paraphrase always mirrors, varied never does
    assert browser.js("return document.querySelectorAll('details.turn-diffs').length") == TURNS
    no_raw_values(browser.js(PAGE_TEXT))
    # The picture in docs/workbench.md: the rollouts' differences, then turn 1 side by side.
    browser.open(browser.js("return location.href"))
    browser.js(
        "const t = document.getElementById('turn-1');"
        "window.scrollTo(0, t.getBoundingClientRect().top + window.scrollY - 170)"
    )
    browser.screenshot(ARTIFACTS / "paired-view.png")
    assert browser.console_errors() == []


def test_the_compare_page_links_the_pairs(browser, server):
    browser.open(f"{server}/compare?run=matrix")
    links = browser.js("return [...document.querySelectorAll('ul.pairs a.pair')].map(a => a.href)")
    assert len(links) == ROLLOUTS  # one pair per rollout index
    browser.open(links[0])
    assert browser.js("return document.querySelectorAll('section.pair-turn').length") == TURNS
    assert browser.console_errors() == []
