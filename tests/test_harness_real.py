"""The shipped pack against programs nobody here wrote — ``llm chat -m SmolLM2`` in a real
pseudo-terminal, llama.cpp's own OpenAI-compatible server over HTTP — and every role on the
embedded model against the shipped studio. Short: a turn or two each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness_support import STAND_INS, lines, utterance
from tests.servers import llama_cpp_server
from tests.test_harness_cli import loom

pytestmark = pytest.mark.slow
SCENARIO = ["--scenario", "creator_thumbnail_pack"]


def short_questions(tmp_path: Path) -> list[str]:
    """A scripted user asking for short answers (a small model rambles otherwise)."""
    script = tmp_path / "user.json"
    asks = [
        "In one short sentence: what makes a good video thumbnail?",
        "In one short sentence: which colour should the title be?",
    ]
    script.write_text(json.dumps([json.loads(utterance(a)) for a in ["", *asks]]))
    models = {**STAND_INS, "user": f"scripted/{script}"}
    return [arg for role, spec in models.items() for arg in ("--model", f"{role}={spec}")]


def check_session(bundle: Path, turns: int) -> list[dict]:
    summary = json.loads((bundle / "summary.json").read_text())
    assert summary["status"] == "done" and summary["turns"] == turns, summary
    assert len(lines(bundle / "reflections.jsonl")) == turns
    replies = [r for r in lines(bundle / "transcript.jsonl") if r["kind"] == "assistant_output"]
    return replies


def test_llm_chat_over_the_pty_adapter(tmp_path):
    out = tmp_path / "run"
    args = ["--target", "llm-chat", "--max-turns", "2", *short_questions(tmp_path), "-o", str(out)]
    result = loom("harness", "run", "studio_benchmarks", *SCENARIO, *args, timeout=900)
    assert result.returncode == 0, result.stderr
    bundle = out / "creator_thumbnail_pack-1"
    greeting, *replies = check_session(bundle, 2)
    assert greeting["text"].startswith("Chatting with SmolLM2")
    for reply in replies:
        assert reply["ended_by"] == "prompt" and reply["text"].strip() and not reply["failed"]
        assert "\x1b" not in reply["text"]
    cast = (bundle / "session.cast").read_text().splitlines()
    assert "llm" in json.loads(cast[0])["title"] and len(cast) > 5


def test_llama_cpp_server_over_the_http_adapter(tmp_path):
    out = tmp_path / "run"
    with llama_cpp_server() as url:
        result = loom(
            "harness",
            "run",
            "studio_benchmarks",
            *SCENARIO,
            "--target",
            f"http:{url}",
            "--max-turns",
            "2",
            *short_questions(tmp_path),
            "-o",
            str(out),
            timeout=900,
        )
    assert result.returncode == 0, result.stderr
    bundle = out / "creator_thumbnail_pack-1"
    replies = [r for r in check_session(bundle, 2) if r["turn"] is not None]
    assert len(replies) == 2
    assert all(r["ended_by"] == "complete" and r["text"].strip() for r in replies)
    session = json.loads((bundle / "session.json").read_text())
    assert session["target"]["settings"]["adapter"] == "http"


def test_every_role_on_the_embedded_model_against_the_studio(tmp_path):
    out = tmp_path / "run"
    result = loom(
        "harness",
        "run",
        "studio_benchmarks",
        "--scenario",
        "drop_lookbook_rescue",
        "--max-turns",
        "1",
        "--seed",
        "2",
        "-o",
        str(out),
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr
    bundle = out / "drop_lookbook_rescue-1"
    session = json.loads((bundle / "session.json").read_text())
    assert set(session["models"].values()) == {"local/smollm2"}
    assert "--model" in session["target"]["resolved"]["command"]
    assert session["target"]["resolved"]["command"][-3] == "embedded"
    summary = json.loads((bundle / "summary.json").read_text())
    assert summary["turns"] == 1
    assert len(lines(bundle / "reflections.jsonl")) == summary["turns"]
