"""Scores credit what the program did, not what the simulated user typed: abilities on the
target's evidence, silence as "no output", real error lines as failures, an evaluator's "met"
only with evidence that is there. Real programs: the shipped studio in a PTY, an
OpenAI-compatible server on loopback that answers with small talk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from loom_sim.harness.actors.evaluator import Evaluator, EvaluatorSetup
from loom_sim.harness.actors.target import failure_of

from loom_sim.harness.evidence import ability_evidence
from loom_sim.harness.messages import (
    Action,
    Artifact,
    Evaluate,
    Evaluation,
    Reflection,
    TargetReply,
)
from loom_sim.harness.packs import load_pack
from loom_sim.harness.packs.spec import Ability
from loom_sim.harness.records import HarnessTurn, Reply
from loom_sim.harness.report import write_report
from loom_sim.harness.scorecard import reflection_quality
from loom_sim.harness.targets.base import Exchange
from loom_sim.harness.targets.http import HttpSettings
from loom_sim.harness.targets.model import ModelSettings
from loom_sim.harness.targets.pty import PtySettings
from loom_sim.harness.validity import MEASURED
from loom_sim.messages import WindowTurn
from loom_sim.models.scripted import ScriptedClient
from loom_sim.plugins.outcomes import DEFAULT_FAILURE_PATTERN
from loom_sim.seeds import SeedSource
from loom_sim.testing.fake_server import FakeOpenAIServer
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
    # a copy, not a link: a pack's inputs must lie inside its own folder
    shutil.copytree(SHIPPED.parent / "studio_benchmarks", tmp_path / "studio_benchmarks")
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
    # the card and the report state how far the detectors behind its verdicts can be trusted
    stated = card["detectors"]
    assert (
        set(stated) == set(MEASURED)
        and stated["supported_met"]["n"] == MEASURED["supported_met"]["n"]
    )
    write_report(tmp_path / "run")
    report = (tmp_path / "run" / "report.md").read_text()
    figures = MEASURED["failure_pattern"]
    assert f"failure_pattern P {figures['precision']:.2f} R {figures['recall']:.2f}" in report


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


# ─── the evaluator: a "met" needs evidence that is there ──────────────────────


def _evaluator(answers: list[str]):

    scenario = load_pack(SHIPPED).pack.scenarios[0]  # launch_ready is judged
    calls = iter(answers)  # one answer per call, in order
    client = ScriptedClient("scripted/evaluator", responses=lambda request: next(calls))
    return Evaluator(client, SeedSource(1, 0), EvaluatorSetup(scenario))


def _window(*pairs: tuple[str, str]):

    return [WindowTurn(i, typed, said) for i, (typed, said) in enumerate(pairs)]


async def test_the_rubrics_placeholder_is_not_met_and_a_quoted_met_stays_met():

    template = json.dumps({"met": {"launch_ready": True}, "evidence": "one short sentence"})
    quoted = json.dumps(
        {"met": {"launch_ready": True}, "evidence": 'It printed "saved out1: out1_blend.png"'}
    )
    evaluator = _evaluator([template, quoted])
    first = await evaluator._evaluate(
        Evaluate(turn=0, window=_window(("/diagnose img1", "img1: underexposed")))
    )
    (ready,) = [r for r in first.results if r.id == "launch_ready"]
    assert ready.met is False and ready.detail.startswith("unsupported: 'one short sentence'")
    second = await evaluator._evaluate(
        Evaluate(
            turn=1,
            window=_window(("/blend img1 img2", "saved out1: out1_blend.png (512x341)")),
        )
    )
    (ready,) = [r for r in second.results if r.id == "launch_ready"]
    assert ready.met is True and "quotes the transcript" in ready.detail
    third = await evaluator._evaluate(Evaluate(turn=2, window=_window(("hi", "hello"))))
    assert [r.met for r in third.results if r.id == "launch_ready"] == [True]  # stays met


# ─── what a reply means: silence, error lines, every target kind ──────────────


def test_silence_is_no_output_and_error_lines_fail_for_every_target_kind():

    pty = PtySettings(command=["sqlite3"], prompt="^sqlite> $")
    http = HttpSettings(adapter="http", url="http://127.0.0.1:9/v1")
    model = ModelSettings(spec="scripted/echo")
    for settings in (pty, http, model):  # the docs say every target has one
        assert settings.failure_pattern == DEFAULT_FAILURE_PATTERN
    assert failure_of(Exchange("", "prompt"), [], pty) is None  # INSERT …; prints nothing
    assert failure_of(Exchange("", "idle"), [], pty) is None  # bc's x = 1000
    assert failure_of(Exchange("", "complete"), [], http) == "no output"  # a chat that says nil
    said = 'Parse error: near "SELEC": syntax error\n  SELEC 1;\n  ^--- error here'
    assert failure_of(Exchange(said, "prompt"), [], pty) == (
        'the target reported an error: Parse error: near "SELEC": syntax error'
    )
    overloaded = Exchange("Error: the model is overloaded, try again later", "complete")
    assert failure_of(overloaded, [], http) is not None
    assert failure_of(overloaded, [], model) is not None
    strict = PtySettings(command=["x"], success_pattern=r"^rows: \d+", on_silence="failed")
    assert failure_of(Exchange("", "prompt"), [], strict) == "no output"
    assert "does not look like success" in (failure_of(Exchange("hm", "prompt"), [], strict) or "")
    assert failure_of(Exchange("rows: 3", "prompt"), [], strict) is None


# ─── reflections that say nothing ─────────────────────────────────────────────


def test_hollow_reflections_score_low():

    def turn(n: int, worked: str, failed: str, questions: list[str], plan: str) -> HarnessTurn:
        text = f"/blend img{n} img{n + 1}"
        return HarnessTurn(
            turn=n,
            action=Action("command", text, "blend", text.split()[1:]),
            reply=Reply(f"saved out{n}", "prompt"),
            signals=[f"event image_generated (blend) -> out{n}"],
            reflection=Reflection(n, {}, [], worked, failed, questions, plan, 0.5),
            evaluation=Evaluation([], 0.0),
        )

    code = "This is a code."
    echoing = [turn(n, code, code, [code], code) for n in range(4)]
    empty = [turn(n, "", "", [], "") for n in range(4)]
    names = [
        turn(n, "what worked", "what failed", ["open questions"], "next hypothesis")
        for n in range(4)
    ]
    said = [
        ("the blend of img1 and img2 saved as out1", "Is out1 bright enough?", "recast out1"),
        ("", "Which image is darkest of the three?", "diagnose every image first"),
        ("img3 came out underexposed at 0.24", "How far should it go?", "recast img3 bright"),
        ("the bright recast lifted img3 nicely", "Does it match the others?", "argue img3 img1"),
    ]
    real = [
        turn(n, w, "" if w else "img7 does not exist", [q], p) for n, (w, q, p) in enumerate(said)
    ]
    repeated = [real[0]] + [turn(n, *_fields(real[0])) for n in range(1, 4)]
    assert reflection_quality(echoing)[0] < 0.2  # was 0.748
    assert reflection_quality(empty)[0] == 0.0
    assert reflection_quality(names)[0] == 0.0
    assert reflection_quality(repeated)[0] < 0.5
    value, detail = reflection_quality(real)
    assert value > 0.7 and detail["saying_little"] == 0
    assert reflection_quality(echoing)[1]["saying_little"] == 4


def _fields(t) -> tuple:
    r = t.reflection
    return r.what_worked, r.what_failed, r.open_questions, r.next_hypothesis
