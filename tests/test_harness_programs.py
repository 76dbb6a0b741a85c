"""Programs nobody here wrote, driven for real through a PTY: sqlite3 (the shipped
``sqlite_notes`` pack) and bc. A statement that works and prints nothing is "no output", not a
failure; a real error line is a failure; a continuation prompt is noticed, recorded and reset."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import trio
from loom_sim.harness.actors.target import failure_of
from rich.console import Console

from loom_sim.cli.harness_view import render
from loom_sim.harness.targets.base import AdapterContext
from loom_sim.harness.targets.pty import PtyAdapter, PtySettings
from tests.harness_support import ROOT, by_turn, lines, plan, run_plan, utterance

pytestmark = pytest.mark.slow
SQLITE_PACK = ROOT / "configs" / "packs" / "sqlite_notes.yaml"
USER = "scripted/typist"


def needs(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed (scripts/install-test-deps installs it)")


def typed(out: Path, pack: Path, said: list[str], **options) -> Path:
    """Run ``pack`` with a user who types ``said``, one line a turn; the session's bundle."""
    answers = by_turn([utterance(s) for s in said])
    run_plan(plan(pack, out, roles={"user": USER}, **options), custom={USER: answers})
    (bundle,) = [p for p in out.iterdir() if p.is_dir()]
    return bundle


def test_sqlite_inserts_a_syntax_error_and_a_continuation_prompt(tmp_path):
    needs("sqlite3")
    said = [
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);",
        "INSERT INTO notes(body) VALUES ('buy milk');",
        "INSERT INTO notes(body) VALUES ('call the plumber')",  # no ';': sqlite3 waits at ...>
        "SELEC body FROM notes;",  # the deliberate syntax error
        "INSERT INTO notes(body) VALUES ('water the plants');",
        "SELECT count(*) FROM notes;",
    ]
    bundle = typed(tmp_path / "run", SQLITE_PACK, said)
    turns = lines(bundle / "turns.jsonl")
    assert [t["action"]["text"] for t in turns] == said  # 6 turns, as typed
    answers = [r for r in lines(bundle / "transcript.jsonl") if r["kind"] == "assistant_output"]
    answers = [r for r in answers if r["turn"] is not None]
    assert [r["failed"] for r in answers] == [False, False, False, True, False, False]
    assert answers[3]["failure"].startswith(
        'the target reported an error: Parse error: near "SELEC"'
    )
    for silent in (0, 1, 4):  # CREATE and INSERT print nothing: no output, not a failure
        assert answers[silent]["output"] == "none" and answers[silent]["text"] == ""
    assert answers[2]["continuation"] == {"prompt": "   ...> ", "reset": ";"}
    assert "continuation prompt '   ...> '; reset by sending ';'" in turns[2]["signals"]
    assert answers[5]["text"] == "3" and "no output" in turns[0]["signals"]
    # the program did the work: three rows, the one after the continuation among them
    rows = sqlite3.connect(bundle / "target" / "notes.db").execute("SELECT body FROM notes")
    assert [r[0] for r in rows] == ["buy milk", "call the plumber", "water the plants"]
    summary = json.loads((bundle / "summary.json").read_text())
    assert summary["failed_actions"] == 1 and summary["criteria"]["counted"] is True
    console = Console(record=True, width=140)
    for part in render(bundle, slice(None)):
        console.print(part)
    shown = console.export_text()
    assert "stopped at its continuation prompt '   ...> '; reset with ';'" in shown
    # CREATE, two INSERTs and the one finished by the reset print nothing; one line failed
    assert shown.count("target      (no output)") == 4 and shown.count("\nfailed ") == 1


def test_bc_silence_is_no_output_and_its_error_lines_are_failures(tmp_path):
    needs("bc")
    pack = tmp_path / "bc.json"
    pack.write_text(
        json.dumps(
            {
                "targets": {
                    "bc": {
                        "adapter": "pty",
                        "command": ["bc", "-q"],
                        "idle_s": 1.0,
                        "exit": "quit",
                        "offers_abilities": False,
                    }
                },
                "defaults": {"target": "bc"},
                "personas": {"p": {"who": "Someone doing sums."}},
                "scenarios": [
                    {
                        "id": "sums",
                        "persona": "p",
                        "goal": "Work out x + 2.",
                        "success_criteria": [{"id": "sum", "type": "output", "pattern": "^1002$"}],
                        "budget": {"max_turns": 4, "max_consecutive_failures": 4},
                        "scorecard": {"gate": {"min_required_abilities_used": 0}},
                    }
                ],
            }
        )
    )
    bundle = typed(tmp_path / "run", pack, ["x = 1000", "x / 0", "x + 1", "1 +* 2"])
    answers = [r for r in lines(bundle / "transcript.jsonl") if r["kind"] == "assistant_output"]
    answers = [r for r in answers if r["turn"] is not None]
    assert [r["failed"] for r in answers] == [False, True, False, True]
    assert answers[0]["output"] == "none" and answers[2]["text"] == "1001"
    assert "Runtime error" in answers[1]["failure"]
    assert "syntax error" in answers[3]["failure"]


async def test_without_a_reset_the_continuation_prompt_ends_the_reply_as_a_failure(tmp_path):
    needs("sqlite3")
    settings = PtySettings(
        command=["sqlite3", "-interactive", str(tmp_path / "t.db")],
        prompt="^sqlite> $",
        reply_timeout_s=20,  # were the continuation prompt missed, the reply would time out
    )
    context = AdapterContext(
        workdir=tmp_path,
        bundle=tmp_path,
        inputs=[],
        seed=1,
        model=lambda spec: None,  # type: ignore[arg-type,return-value]
    )
    adapter = PtyAdapter(settings, context)
    async with trio.open_nursery() as nursery:
        try:
            await adapter.start(nursery)
            await adapter.send("SELECT 1 +")
            waiting = await adapter.receive()
            await adapter.send("1;")
            done = await adapter.receive()
        finally:
            await adapter.close()
            nursery.cancel_scope.cancel()
    assert waiting.ended_by == "continuation" and waiting.continuation == "   ...> "
    assert waiting.duration_s < 10 and waiting.text == ""
    assert "continuation prompt '   ...> '" in (failure_of(waiting, [], settings) or "")
    assert done.ended_by == "prompt" and done.text == "2"  # the statement, finished
