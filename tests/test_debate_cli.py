"""``loom-sim debate`` and the commands that read debates: live output, files, reports, view,
trace, diagram, plain errors, and a debate killed with SIGKILL then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom_sim.cli import cli
from tests.debate_support import artifacts, plan, run

LOOM_SIM = Path(sys.executable).parent / "loom-sim"


def debate(*args: str):
    return CliRunner().invoke(cli, ["debate", *args])


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "d"
    result = debate("planted_values", "--similarity", "tfidf", "--seed", "1", "-o", str(out))
    assert result.exit_code == 0, result.output
    (out / "stdout.txt").write_text(result.stdout)
    return out


def test_the_debate_streams_speakers_intents_rooms_and_cards(finished):
    shown = (finished / "stdout.txt").read_text()
    for part in (
        "Nadia Voss",
        "Felix Ramm",
        "CLARIFY",
        "▶ crux room room-1",
        "exit check after",
        "■ card-1",
    ):
        assert part in shown, part
    assert "21 messages, 0 failed turns, 1 crux rooms, 1 cards" in shown


def test_the_report_shows_the_thread_the_rooms_and_each_card_with_its_cited_messages(finished):
    report = (finished / "report.md").read_text()
    card = json.loads((finished / "cards.json").read_text())["cards"][0]
    assert (
        "▶ **crux room room-1** opened" in report
        and f"**card-1: {card['card']['crux']}**" in report
    )
    for position in card["card"]["positions"]:
        for cited in position["cites"]:
            assert f"  - {cited} (" in report
    page = (finished / "report.html").read_text()
    assert "<script" not in page and "card-1" in page
    plan_file = json.loads((finished / "debate.json").read_text())
    assert plan_file["versions"]["debate_templates"] and plan_file["seed"] == 1
    assert plan_file["models"]["card"] == {
        "spec": "scripted/crux-card",
        "temperature": 0.3,
        "max_tokens": 600,
    }


def test_view_trace_and_diagram_work_on_debates(finished):
    runner = CliRunner()
    view = runner.invoke(cli, ["view", str(finished)])
    assert view.exit_code == 0 and "crux room room-1" in view.stdout and "card-1" in view.stdout
    trace = runner.invoke(cli, ["trace", str(finished), "--actor", "detector"])
    assert trace.exit_code == 0
    for kind in ("Posted", "Detect", "Detection", "CheckExit", "ExtractCard", "CardAnswer"):
        assert kind in trace.stdout, kind
    for machine, states in (
        ("debate", ("assign", "speak", "detect", "room")),
        ("crux_room", ("exchange", "check", "extract")),
    ):
        drawn = runner.invoke(cli, ["diagram", "--machine", machine])
        assert drawn.exit_code == 0 and all(s in drawn.stdout for s in states)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no_such_deck"], "no shipped deck of that name"),
        (
            ["planted_values", "--personas", "nadia-voss,zed"],
            "--personas: zed not in deck planted-values",
        ),
        (["planted_values", "--model", "moderator=scripted/echo"], "'moderator' is neither a tier"),
        (
            ["planted_values", "--resume", "."],
            "--resume continues a debate with the settings in its debate.json",
        ),
        ([], "give a DECK to debate, or --resume DIR"),
    ],
)
def test_mistakes_are_one_plain_sentence(args, message):
    result = debate(*args)
    assert result.exit_code == 1 and message in result.stderr and "Traceback" not in result.output


def test_the_report_says_whether_the_planted_crux_was_found_and_quotes_measured_figures(finished):
    from markupsafe import escape

    from loom_sim.debate.validity import measured

    figures = measured()
    gate, round_ = figures.get("gate[fallback]"), figures.get("disagreement[fallback]")
    wanted = [
        "This deck plants a values disagreement between ",
        ": FOUND — room-1 opened after ",
        "(the planted type)",
        f"Measured on labelled windows ({figures.date}, TF-IDF similarity, the words alone): "
        f"{gate}",
        f"{round_}.",
        str(figures.get("citation_stance[fallback]")),
        str(figures.get("crux_type")),
    ]
    markdown = (finished / "report.md").read_text()
    page = (finished / "report.html").read_text()
    for part in wanted:
        assert part in markdown, part
        assert str(escape(part)) in page, part


def test_a_bad_deck_is_reported_at_its_line(tmp_path):
    bad = tmp_path / "deck.yaml"
    text = (Path(__file__).parent.parent / "configs" / "decks" / "planted_claim.yaml").read_text()
    bad.write_text(text.replace("  name: Ida Berg", "  name: Ida Berg\n  nmae: x", 1))
    result = debate(str(bad))
    assert (
        result.exit_code == 1
        and f"{bad}:" in result.stderr
        and "unknown key 'nmae'" in result.stderr
    )


@pytest.mark.slow
def test_two_debates_on_the_shipped_planted_deck_write_identical_files(tmp_path):
    # as shipped: MiniLM embeddings for the cheap signals, scripted models for the rest
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert debate("planted_horizon", "--seed", "4", "-o", str(out)).exit_code == 0
    assert json.loads((first / "summary.json").read_text())["rooms"] >= 1
    assert artifacts(first) == artifacts(second)


SLOW_CLI = """
import sys
from loom_sim.models import scripted
original = scripted.ScriptedClient.__init__
def slow(self, *args, **kw):
    kw.setdefault("latency_s", 0.03)
    original(self, *args, **kw)
scripted.ScriptedClient.__init__ = slow
from loom_sim.cli import main
sys.argv = ["loom-sim", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_a_debate_killed_with_sigkill_resumes_without_a_repeated_or_lost_message(tmp_path):
    whole = tmp_path / "whole"
    run(plan("planted_claim", whole, seed=3))
    out = tmp_path / "killed"
    argv = ["planted_claim", "--seed", "3", "--similarity", "tfidf", "-o", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_CLI, "debate", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    room = out / "rooms" / "room-1" / "transcript.jsonl"
    deadline = time.monotonic() + 120
    while not (room.exists() and len(room.read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "summary.json").exists()
    resumed = subprocess.run(
        [str(LOOM_SIM), "debate", "--resume", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "(resumed at turn" in resumed.stdout
    assert artifacts(out) == artifacts(whole)
    ids = [json.loads(x)["id"] for x in (out / "trace.jsonl").read_text().splitlines() if x]
    assert len(ids) == len(set(ids))


@pytest.mark.slow
def test_ctrl_c_says_where_the_messages_are_and_how_to_continue(tmp_path):
    out = tmp_path / "d"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SLOW_CLI,
            "debate",
            "planted_claim",
            "--similarity",
            "tfidf",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    messages = out / "messages.jsonl"
    deadline = time.monotonic() + 120
    while not (messages.exists() and len(messages.read_text().splitlines()) >= 4):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "Traceback" not in err
    assert f"interrupted; every completed message is in {out}" in err
    assert f"Continue with: loom-sim debate --resume {out}" in err
    kept = len(messages.read_text().splitlines())
    assert kept >= 4
    resumed = subprocess.run(
        [str(LOOM_SIM), "debate", "--resume", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    turns = [json.loads(x)["turn"] for x in messages.read_text().splitlines()]
    assert turns == list(range(21))


def test_the_detector_goes_through_the_one_model_path_retrying_429_500_529(tmp_path):
    from loom_sim.testing.fake_server import FakeOpenAIServer

    out = tmp_path / "d"
    with FakeOpenAIServer(fault_sequence="429,500,529") as server:
        result = debate(
            "planted_horizon", "--seed", "2", "--similarity", "tfidf", "-n", "9", "-o", str(out),
            "--model", "detection=openai/fake", "--base-url", server.base_url,
        )  # fmt: skip
        stats = server.stats()
    assert result.exit_code == 0, result.output
    asked = [
        json.loads(x)
        for x in (out / "detections.jsonl").read_text().splitlines()
        if '"asked":true' in x
    ]
    assert asked, "the gate never opened"
    # the fake answers with schema-shaped filler: refused with the reason, asked again, recorded
    assert all(r["attempts"] == 2 and "pair must list two persona ids" in r["error"] for r in asked)
    assert stats["faults_by_kind"] == {"429": 1, "500": 1, "529": 1}  # each retried
    assert stats["by_route"]["/v1/chat/completions"] == 3 + 2 * len(asked)
    usage = json.loads((out / "summary.json").read_text())["usage"]["detection"]
    assert usage["input_tokens"] > 0
