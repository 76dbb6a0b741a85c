"""The viewer's reading aids against its ASGI app: rounded numbers and labelled details, the
finish reason recorded per turn, the compare page's difference columns, a live matrix shown
as running (its lock held by another real process), and the paired view's plain refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from test_web import cut_to_live
from workbench_runs import TURNS, make_cut_run, make_matrix, make_single

from loom_sim.cli import cli
from loom_sim.web.app import create_app
from loom_sim.web.display import entries, number, signed

ARM = "matrix/mania_patient--scripted-varied"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("work")
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(make_matrix(work), root / "matrix")
    shutil.copytree(make_single(work, "scripted/varied", "single"), root / "single")
    make_cut_run(work, root / "cut")
    return root


@pytest.fixture
async def client(root):
    app = create_app(root, poll_s=0.05, lifetime=20)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http


def test_numbers_are_rounded_for_reading():
    assert number(-0.04899999999999999) == "-0.049"
    assert number(0.5379999999999999) == "0.538"
    assert number(-0.0000001) == "0.000"
    assert number(12345.678) == "12,346"
    assert number(3) == "3" and number(True) == "yes" and number(None) == "–"
    assert signed(-0.04899999999999999) == "−0.05" and signed(0.25) == "+0.25"
    assert signed(0.0) == "0.00"


def test_details_are_labelled_values_not_json():
    found = entries(
        {
            "gap": {"distress": -0.04899999999999999, "belief_intensity": 0.2},
            "qa_answers": [["What is your name?", "Marcus."], ["How old are you?", "28."]],
            "formulaic": [],
            "reason": "consistent so far",
        }
    )
    gap, qa, formulaic, reason = found
    assert gap.label == "gap" and [(c.label, c.text) for c in gap.children] == [
        ("distress", "-0.049"),
        ("belief intensity", "0.200"),
    ]
    assert qa.label == "qa answers" and qa.items
    assert [c.text for c in qa.children] == [
        "What is your name? — Marcus.",
        "How old are you? — 28.",
    ]
    assert formulaic.text == "none" and reason.text == "consistent so far"


def test_each_turn_records_why_each_model_stopped(root):
    """The scripted models stop on their own at these lengths: "stop" for both roles."""
    lines = (root / ARM / "rollout_000" / "turns.jsonl").read_text().splitlines()
    reasons = [json.loads(line)["finish_reasons"] for line in lines]
    assert reasons == [{"persona": "stop", "interlocutor": "stop"}] * TURNS


def cut_turns(root: Path) -> tuple[list[int], list[int]]:
    """The turns (from 1) whose target reply was cut at its token limit, and the others."""
    lines = (root / "cut" / "rollout_000" / "turns.jsonl").read_text().splitlines()
    reasons = [json.loads(line)["finish_reasons"]["interlocutor"] for line in lines]
    cut = [n for n, why in enumerate(reasons, 1) if why == "length"]
    whole = [n for n, why in enumerate(reasons, 1) if why == "stop"]
    assert cut and whole and len(cut) + len(whole) == TURNS
    return cut, whole


async def test_a_cut_reply_is_marked_on_the_page_and_in_view(root, client):
    cut, _ = cut_turns(root)
    page = (await client.get("/rollout/cut/rollout_000")).text
    sections = [s.split("</section>")[0] for s in page.split('<section class="turn" ')[1:]]
    marked = [
        int(re.match(r'id="turn-(\d+)"', s).group(1))
        for s in sections
        if "cut at the token limit" in s
    ]
    assert marked == cut
    result = CliRunner().invoke(cli, ["view", str(root / "cut" / "rollout_000")])
    assert result.exit_code == 0, result.output
    assert result.output.count("interlocutor: cut at the token limit") == len(cut)


async def test_the_rollout_page_reads_as_a_researcher_reads_it(client):
    page = (await client.get(f"/rollout/{ARM}/rollout_000")).text
    assert re.findall(r'data-turn="(\d+)"', page) == [str(n) for n in range(1, TURNS + 1)]
    details = re.findall(r'<td class="details">(.*?)</td>', page, re.S)
    assert len(details) > TURNS
    for cell in details:  # labelled values: no JSON's quotes, braces or brackets
        assert not re.search(r"&#34;|[{}\[\]]", cell), cell
    assert not re.search(r"\d\.\d{5,}", page)
    assert page.count('<details class="turn-scores">') == TURNS


async def test_the_compare_page_has_a_difference_column_for_each_target(client):
    page = (await client.get("/compare?run=matrix&run=single")).text
    header = re.search(r"<th>scorer</th>(.*?)</tr>", page).group(1)
    columns = re.findall(r"<th>(.*?)</th>", header)
    assert len(columns) == 5  # three targets, two differences from the first
    assert [c for c in columns if "−" in c] == [
        "scripted/paraphrase − scripted/varied @ matrix",
        "scripted/varied @ single − scripted/varied @ matrix",
    ]
    assert 'class="pair"' in page


async def test_the_paired_view_refuses_plainly(client):
    reply = await client.get("/pair?a=" + f"{ARM}/rollout_000")
    assert reply.status_code == 400 and "needs two rollouts" in reply.text
    reply = await client.get(f"/pair?a={ARM}/rollout_000&b=nowhere/rollout_000")
    assert reply.status_code == 404 and "Traceback" not in reply.text
    reply = await client.get(f"/pair?a={ARM}/rollout_000&b={ARM}/rollout_001")
    assert reply.status_code == 200 and "not the same rollout of the same seed" in reply.text


HOLD = """
import sys
from pathlib import Path
from loom_sim.core.lock import hold
with hold(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


async def test_a_live_matrix_shows_running(root, client):
    """A matrix a process is writing: its page, its arm's page and the compare page say
    "running", not "partial" or "resumable"; once the process is gone, it is resumable."""
    live = root / "live"
    shutil.copytree(root / "matrix", live)
    cut_to_live(live / ARM.split("/", 1)[1])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(live)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for path in ("/run/live", f"/run/live/{ARM.split('/', 1)[1]}"):
            page = (await client.get(path)).text
            assert 'id="live-status">running</span>' in page, path
            assert "Running now" in page and "--resume" not in page
        page = (await client.get("/compare?run=live")).text
        assert '<span class="badge running">running</span>' in page
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    page = (await client.get("/run/live")).text
    assert 'id="live-status">partial</span>' in page and "--resume" in page


def test_the_report_marks_a_flagged_reply_cut(root, tmp_path):
    """report.md and report.html show a flagged turn's reply as cut when its record says the
    model stopped at its token limit (the record is the evidence: set here on a flagged turn)."""
    run = tmp_path / "cut"
    shutil.copytree(root / "cut", run)
    report = json.loads((run / "report.json").read_text())
    flagged = report["rollouts"][0]["flagged"]
    assert flagged, "the fixture's rollout has flagged turns"
    turn = flagged[0]["turn"]
    path = run / "rollout_000" / "transcript.json"
    transcript = json.loads(path.read_text())
    transcript["turns"][turn]["finish_reasons"] = {"persona": "stop", "interlocutor": "length"}
    path.write_text(json.dumps(transcript))
    result = CliRunner().invoke(cli, ["report", str(run)])
    assert result.exit_code == 0, result.output
    entry = json.loads((run / "report.json").read_text())["rollouts"][0]["flagged"][0]
    assert entry["cut"] == ["interlocutor"]
    assert "interlocutor (cut at the token limit):" in (run / "report.md").read_text()
    assert '<span class="cut">cut at the token limit</span>' in (run / "report.html").read_text()
