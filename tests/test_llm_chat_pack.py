"""The shipped ``llm_chat`` pack: ``llm chat -m SmolLM2``, a chat program nobody here wrote,
driven through a real pseudo-terminal past the turn where llama.cpp's default context used to end
it, and judged by criteria a chat program can meet (no abilities required)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_sim.harness.llm_cli import split_options
from loom_sim.harness.packs import load_pack
from tests.harness_support import STAND_INS, lines, utterance
from tests.test_harness_cli import loom

ROOT = Path(__file__).resolve().parent.parent


def test_the_launchers_own_options_come_first_and_the_rest_goes_to_llm():
    assert split_options(["chat", "-m", "SmolLM2"]) == (
        {"n_ctx": 0, "max_tokens": 256, "seed": -1},
        ["chat", "-m", "SmolLM2"],
    )
    options, rest = split_options(["--seed", "7", "--n-ctx", "2048", "chat", "--n-ctx", "1"])
    assert options == {"n_ctx": 2048, "max_tokens": 256, "seed": 7}
    assert rest == ["chat", "--n-ctx", "1"]
    with pytest.raises(SystemExit, match="--max-tokens needs a whole number"):
        split_options(["--max-tokens", "many", "chat"])


def test_the_pack_requires_no_ability_and_its_gate_can_be_met_by_replies_alone():
    pack = load_pack(ROOT / "configs" / "packs" / "llm_chat.yaml").pack
    assert pack.targets["llm-chat"].offers_abilities is False
    for scenario in pack.scenarios:
        assert not scenario.required_abilities
        assert scenario.scorecard.gate.min_required_abilities_used == 0
        kinds = {criterion.type for criterion in scenario.success_criteria}
        assert kinds <= {"output", "judged"}, kinds


@pytest.mark.slow
def test_llm_chat_keeps_talking_past_the_default_context(tmp_path):
    """Long answers: with llama.cpp's 512-token default, plain ``llm chat -m SmolLM2`` dies on
    the third of these questions ("Requested tokens (531) exceed context window of 512"). Here
    the chat goes on, and its list meets the scenario's criteria: a chat program can pass."""
    script = tmp_path / "user.json"
    asks = [
        "Give me a packing list for one night of hiking, as a list of five items.",
        "Tell me about tents in three paragraphs.",
        "Tell me about sleeping bags in three paragraphs.",
        "Tell me about water filters in three paragraphs.",
    ]
    script.write_text(json.dumps([json.loads(utterance(a)) for a in ["", *asks]]))
    models = {**STAND_INS, "user": f"scripted/{script}"}
    roles = [arg for role, spec in models.items() for arg in ("--model", f"{role}={spec}")]
    out = tmp_path / "run"
    args = ["--scenario", "packing_list", "--max-turns", "4", "--seed", "3", *roles, "-o", str(out)]
    result = loom("harness", "run", "llm_chat", *args, timeout=1500)
    assert result.returncode == 0, result.stderr
    bundle = out / "packing_list-1"
    summary = json.loads((bundle / "summary.json").read_text())
    assert summary["status"] == "done" and summary["turns"] >= 3, summary
    assert summary["criteria"]["listed"] is True and summary["passed"] is True, summary
    replies = [
        r
        for r in lines(bundle / "transcript.jsonl")
        if r["kind"] == "assistant_output" and r["turn"] is not None
    ]
    assert len(replies) == summary["turns"]
    for reply in replies:
        assert reply["ended_by"] == "prompt" and not reply["failed"], reply
        assert reply["text"].strip() and "exceed context window" not in reply["text"]
