"""Scores credit what the program did, not what the simulated user typed: abilities on the
target's evidence, silence as "no output", real error lines as failures, an evaluator's "met"
only with evidence that is there. Real programs: the shipped studio in a PTY, an
OpenAI-compatible server on loopback that answers with small talk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_sim.harness.evidence import ability_evidence
from loom_sim.messages import Action, Artifact, TargetReply
from loom_sim.packs.spec import Ability
from loom_sim.testing.fake_openai import FakeOpenAIServer
from tests.harness_support import ROOT, lines, plan, run_plan

SHIPPED = ROOT / "configs" / "packs" / "studio_benchmarks.json"
SCENARIO = ("drop_lookbook_rescue",)


def shipped_with_chat_target(tmp_path: Path, url: str) -> Path:
    """The shipped pack, plus a target that *declares* the studio's abilities but is a plain
    chat server: the worst case, a pack that believes the program has tools it lacks."""
    pack = json.loads(SHIPPED.read_text())
    pack["targets"]["chat"] = {
        "adapter": "http",
        "url": url,
        "model": "small-talk",
        "offers_abilities": True,
    }
    (tmp_path / "studio_benchmarks").symlink_to(SHIPPED.parent / "studio_benchmarks")
    path = tmp_path / "pack.json"
    path.write_text(json.dumps(pack))
    return path


def session(out: Path) -> tuple[dict, dict, list[dict]]:
    bundle = out / f"{SCENARIO[0]}-1"
    card = json.loads((bundle / "scorecard.json").read_text())
    summary = json.loads((bundle / "summary.json").read_text())
    return card, summary, lines(bundle / "turns.jsonl")


@pytest.mark.slow
def test_ability_commands_typed_at_a_chat_server_earn_nothing_and_fail_the_gate(tmp_path):
    with FakeOpenAIServer() as server:
        pack = shipped_with_chat_target(tmp_path, server.base_url)
        declared = plan(pack, tmp_path / "declared", target="chat", scenarios=SCENARIO, max_turns=4)
        run_plan(declared)
        shorthand = plan(
            SHIPPED,
            tmp_path / "shorthand",
            target=f"http:{server.base_url}",
            scenarios=SCENARIO,
            max_turns=4,
        )
        run_plan(shorthand)
    card, summary, turns = session(tmp_path / "declared")
    typed = [t for t in turns if t["action"]["kind"] == "command"]
    assert len(typed) >= 2  # the user typed /diagnose, /bridge... at the chat server
    assert all(not t["failed"] and t["ability_evidence"] is None for t in typed)
    usage = card["components"]["ability_usage_quality"]
    assert usage["value"] == 0.0 and usage["covered"] == [] and summary["abilities_used"] == []
    assert card["gate"]["required_abilities_used"]["passed"] is False and not card["passed"]
    # --target http:URL: a program named by its address offers none of the pack's abilities
    card, summary, turns = session(tmp_path / "shorthand")
    assert all(t["action"]["kind"] == "utterance" for t in turns)
    assert card["components"]["ability_usage_quality"]["value"] == 0.0
    assert "offers no abilities" in card["components"]["ability_usage_quality"]["note"]
    assert card["gate"]["required_abilities_used"]["passed"] is False and not card["passed"]


@pytest.mark.slow
def test_the_same_pack_against_the_studio_passes_on_the_studios_evidence(tmp_path):
    run_plan(plan(SHIPPED, tmp_path / "run", target="studio-canned", scenarios=SCENARIO))
    card, summary, turns = session(tmp_path / "run")
    assert card["passed"] and card["components"]["ability_usage_quality"]["value"] == 1.0
    evidence = card["components"]["ability_usage_quality"]["evidence"]
    assert set(evidence) == set(summary["abilities_used"]) >= {"diagnose", "argue"}
    assert evidence["diagnose"] == "event diagnosed (diagnose)"
    judged = [r for t in turns for r in t["evaluation"]["results"] if r["judged"] and r["met"]]
    first = [r for r in judged if r["detail"] != "met earlier"]
    assert len(first) == 1 and "(quotes the transcript: " in first[0]["detail"]


def _reply(text: str = "", **fields) -> TargetReply:
    return TargetReply(text=text, ended_by="prompt", **fields)


def test_ability_evidence_is_an_event_a_file_or_a_declared_reply_never_the_typing():
    offered = [Ability(name="blend"), Ability(name="count", evidence=r"^\d+ rows$")]
    blend = Action("command", "/blend img1 img2", "blend", ["img1", "img2"])
    count = Action("command", "/count", "count", [])
    assert ability_evidence(blend, _reply("Sure! I blended them for you."), offered) is None
    event = {"type": "image_generated", "command": "blend", "ok": True}
    assert ability_evidence(blend, _reply(events=[event]), offered) == (
        "event image_generated (blend)"
    )
    error = {"type": "error", "command": "blend", "ok": False}
    assert ability_evidence(blend, _reply(events=[error]), offered) is None
    made = _reply(artifacts=[Artifact("target/out/1.png", 0.6)])
    assert ability_evidence(blend, made, offered) == "new file target/out/1.png"
    assert ability_evidence(count, _reply("3 rows"), offered) == "reply: 3 rows"
    assert ability_evidence(count, _reply("count what?"), offered) is None
    assert ability_evidence(blend, _reply(events=[event]), []) is None  # offered none
    failed = _reply(events=[event], failed=True, failure="error: x")
    assert ability_evidence(blend, failed, offered) is None
