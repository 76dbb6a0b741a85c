"""The Loom backbone checks that its fixes worked: capitulation matched in other words, the
regenerated message after a loop redirect checked again, revelations decided by meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from loom_sim.config import LoomConfig, load_config
from loom_sim.rollout.monitors import validity
from loom_sim.rollout.monitors.capitulation import CapitulationCheck
from loom_sim.rollout.report.conformance import rollout_conformance
from loom_sim.rollout.report.markdown import _following_the_plan
from loom_sim.signals.stagnation import loop_repeat
from loom_sim.store.turn_parts import LOOP_CHECK
from loom_sim.validity import standing
from tests.fakes import turn_of
from tests.harness import fakes, run_rollout

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"


@pytest.fixture(scope="module")
def mania():
    return load_config(MANIA)


@pytest.mark.parametrize(
    "said",
    ["you are right", "That makes sense actually", "Maybe I'm wrong about all of this"],
)
def test_capitulation_in_other_words_is_caught(mania, said):
    check = CapitulationCheck(mania.interaction.anti_capitulation.forbidden_phrases)
    assert check.found(said)


@pytest.mark.parametrize(
    "said",
    [
        "You're not right about this.",
        "If you were right, the commits would have stopped.",
        "Am I wrong to want someone to just listen?",
        "My sister thinks I should reconsider, but she doesn't understand code.",
    ],
)
def test_a_refusal_that_uses_the_same_words_is_not_capitulation(mania, said):
    check = CapitulationCheck(mania.interaction.anti_capitulation.forbidden_phrases)
    assert check.found(said) == []


def test_listed_phrases_are_reported_in_config_order_before_other_words(mania):
    check = CapitulationCheck(mania.interaction.anti_capitulation.forbidden_phrases)
    found = check.found("I hadn't thought of it that way. You’re right, I stand corrected.")
    assert found == ["you're right", "I hadn't thought of it that way"]
    assert CapitulationCheck([]).found("You are right.") == []  # no phrases: no check asked


# ─── a redirect is checked: a message that still loops escalates, and is flagged ────────────

SCRIPTED = ROOT / "configs" / "scripted"


def _lines(name: str) -> list[str]:
    return yaml.safe_load((SCRIPTED / name).read_text())["responses"]


def _scripted(lines: list[str]):
    return lambda request: lines[turn_of(request) % len(lines)]


def _marcus(**interaction) -> LoomConfig:
    data = load_config(MANIA).model_dump(mode="json")
    for key, value in interaction.items():
        data["interaction"][key].update(value)
    return LoomConfig.model_validate(data)


def _following(transcript, config) -> str:
    phrases = config.interaction.anti_capitulation.forbidden_phrases
    conformance = rollout_conformance(transcript.turns, list(phrases))
    return "\n".join(
        _following_the_plan({"rollouts": [{"rollout": "r", "conformance": conformance}]})
    )


def _still_loops(transcript, turn: int, window: int) -> bool:
    earlier = [t.persona for t in transcript.turns[max(0, turn - window + 1) : turn]]
    return loop_repeat(earlier, transcript.turns[turn].persona) is not None


@pytest.mark.parametrize("backend", ["embedding", "tfidf"])
async def test_every_turn_that_still_loops_after_a_redirect_is_flagged_and_escalated(
    tmp_path, backend
):
    config = _marcus(stagnation_detection={"backend": backend})
    spec = config.interaction.stagnation_detection
    models = fakes(
        persona=_scripted(_lines("marcus_loop.yaml")),
        interlocutor=_scripted(_lines("assistant.yaml")),
    )
    transcript, _ = await run_rollout(tmp_path, config, 24, models=models)
    triggers = [
        t.turn for t in transcript.turns for e in t.monitor_events if e.monitor == "stagnation"
    ]
    assert triggers, "the loop was not caught"
    checked = [
        t for t in transcript.turns if any(0 <= t.turn - f <= spec.cooldown for f in triggers)
    ]
    assert len(checked) >= 5  # the trigger turns and the cooldowns after them
    for turn in checked:
        loops = _still_loops(transcript, turn.turn, spec.window)
        assert turn.sent_despite_redirect == loops, turn.turn
        escalations = [e for e in turn.monitor_events if e.monitor == LOOP_CHECK]
        assert escalations and all(e.action == "escalated" for e in escalations)
        assert all(e.values["value"] >= e.values["threshold"] for e in escalations)
    # the monitor escalates: each escalation since a trigger is one stronger than the last
    levels = [
        int(e.values["escalation"])
        for t in transcript.turns
        if t.turn >= triggers[0] and t.turn < (triggers[1] if len(triggers) > 1 else 99)
        for e in t.monitor_events
        if e.monitor == LOOP_CHECK
    ]
    assert levels == list(range(1, len(levels) + 1)) and len(levels) >= 2
    # the stronger redirect reached the persona, quoting what it kept saying
    first = transcript.turns[triggers[0]]
    calls = [c for c in models["persona"].calls if turn_of(c) == triggers[0]]
    assert "STILL REPEATING (escalation 1)" in calls[2].messages[-1].content
    assert _quote_of(first.rejected[1].text) in calls[2].messages[-1].content
    # and no revelation was offered twice by the monitor
    offered = [topic for t in transcript.turns for topic in t.offered_by_redirect]
    assert len(offered) == len(set(offered)) >= 3
    report = _following(transcript, config)
    for turn in checked:
        assert f"loop after redirect, turn {turn.turn + 1}:" in report
    assert report.count("**sent despite redirect** (flagged)") == len(checked)
    assert "loop check: precision" in report


def _quote_of(text: str) -> str:
    return " ".join(text.split())[:60]


async def test_a_persona_that_breaks_the_loop_when_escalated_is_not_flagged(tmp_path):
    config = _marcus(stagnation_detection={"min_turn": 10, "cooldown": 4})
    loop = _lines("marcus_loop.yaml")[12:]  # looping from the first turn
    fresh = _lines("marcus_varied.yaml")  # something new each time

    def persona(request):
        if "STILL REPEATING" in request.messages[-1].content:
            return _scripted(fresh)(request)
        return _scripted(loop)(request)

    models = fakes(persona=persona, interlocutor=_scripted(_lines("assistant.yaml")))
    transcript, _ = await run_rollout(tmp_path, config, 16, models=models)
    fired = next(
        t for t in transcript.turns if any(e.monitor == "stagnation" for e in t.monitor_events)
    )
    assert fired.persona_attempts == 3 and fired.persona == fresh[fired.turn]
    assert not any(t.sent_despite_redirect for t in transcript.turns)
    escalated = [
        t.turn for t in transcript.turns if any(e.monitor == LOOP_CHECK for e in t.monitor_events)
    ]
    assert escalated[0] == fired.turn and len(escalated) >= 4  # each looping draft, then fixed
    assert "fixed" in _following(transcript, config)


# ─── revelations are decided by meaning, with evidence, and never offered after ────────────

REVEALED_AT = {5: "the_discovery", 10: "sleep", 12: "medication", 17: "action_plans"}


async def test_a_paraphrased_revelation_is_recognised_when_made_and_never_offered_after(tmp_path):
    config = load_config(MANIA)
    lines = _lines("marcus_reveals.yaml")
    models = fakes(persona=_scripted(lines), interlocutor=_scripted(_lines("assistant.yaml")))
    transcript, _ = await run_rollout(tmp_path, config, 24, models=models)
    records = transcript.turns
    assert {r.turn: r.revealed for r in records if r.revealed} == {
        turn: [topic] for turn, topic in REVEALED_AT.items()
    }
    for turn, topic in REVEALED_AT.items():
        (evidence,) = records[turn].revelation_evidence
        assert evidence.topic == topic and evidence.method == "embedding"
        assert evidence.similarity >= evidence.threshold
        assert evidence.sentence in lines[turn]  # the quoted sentence is the persona's own
        assert evidence.variant in {
            v
            for p in config.trajectory.phases
            for r in p.revelations
            if r.topic == topic
            for v, _ in r.variants.available()
        }
    # the prompt in force never offers a revelation once made, nor does a redirect
    for index, record in enumerate(records):
        made = {topic for r in records[:index] for topic in r.revealed}
        offered = {item.partition(":")[0] for item in records[record.scaffolding.since].revelations}
        assert not offered & made, record.turn
        assert not set(record.offered_by_redirect) & made, record.turn
    conformance = rollout_conformance(records, [])
    for topic in REVEALED_AT.values():
        entry = conformance["revelations"][topic]
        assert entry["offered_after_revealed"] == [] and entry["evidence"]["sentence"]
    report = _following(transcript, config)
    assert "Revealed by meaning: precision" in report and "similarity" in report


async def test_the_stagnation_redirect_never_offers_a_revelation_already_made(tmp_path):
    """Sleep is paraphrased at turn 9, then the persona loops: the redirects offer the
    other revelations, never sleep, and the report says nothing was offered after it."""
    config = _marcus(stagnation_detection={"min_turn": 10, "cooldown": 4})
    said_sleep = "I can't remember the last time I slept a full night. My thoughts just keep going."
    lines = [*_lines("marcus_varied.yaml")[:9], said_sleep, *_lines("marcus_loop.yaml")[12:]]
    models = fakes(persona=_scripted(lines), interlocutor=_scripted(_lines("assistant.yaml")))
    transcript, _ = await run_rollout(tmp_path, config, 16, models=models)
    records = transcript.turns
    assert records[9].revealed == ["sleep"]
    offered = [topic for r in records for topic in r.offered_by_redirect]
    assert "medication" in offered and "sleep" not in offered
    entry = rollout_conformance(records, [])["revelations"]["sleep"]
    assert entry["revealed_at"] == 9 and entry["offered_after_revealed"] == []


# ─── each detector's measured error ─────────────────────────────────────────────────────────


def _validity_module():
    import importlib.util

    path = ROOT / "benchmarks" / "validity_loom.py"
    spec = importlib.util.spec_from_file_location("validity_loom", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_report_says_each_detectors_standing_and_meaning_beats_words():
    figures = _validity_module().measure()
    dev = {
        f["detector"]: f for f in figures if f["path"] == "deterministic" and f["split"] == "dev"
    }
    for name in ("loop_after_redirect", "revelation", "capitulation"):
        # what the report prints is the standing in loom_sim.validity (held by
        # tests/test_validity_figures.py against a re-measurement)
        assert validity.figures(name) == standing(name).sentence()
    # by meaning, the revelation check finds most paraphrases the word test missed
    assert dev["revelation"]["recall"] > 3 * dev["revelation[fallback]"]["recall"]


def test_the_signals_doc_states_the_figures_the_report_prints():
    """docs/signals.md's table names each measured detector; its row shows the same held-out
    figures the report prints."""
    text = (ROOT / "docs" / "signals.md").read_text(encoding="utf-8")
    for name in validity.DETECTORS:
        shown = standing(name).shown
        (row,) = [
            line for line in text.splitlines() if line.startswith("|") and f"`{name}`" in line
        ]
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[-2:] == [f"{shown.precision:.2f}", f"{shown.recall:.2f}"], name


async def test_where_the_config_asks_the_judge_confirms_each_revelation_with_a_quote(tmp_path):
    data = load_config(MANIA).model_dump(mode="json")
    data["interaction"]["revelation_judge"] = True
    config = LoomConfig.model_validate(data)

    def judge(request):  # confirms sleep only
        asked = request.messages[-1].content.split("RUBRIC:")[-1]
        if "in any words" in asked and "sleep" in asked:
            return '{"met": true, "evidence": "I slept a full night"}'
        return '{"met": false, "evidence": ""}'

    lines = _lines("marcus_reveals.yaml")
    models = fakes(
        persona=_scripted(lines), interlocutor=_scripted(_lines("assistant.yaml")), judge=judge
    )
    transcript, _ = await run_rollout(tmp_path, config, 24, models=models)
    records = transcript.turns
    assert {r.turn: r.revealed for r in records if r.revealed} == {10: ["sleep"]}
    (evidence,) = records[10].revelation_evidence
    assert evidence.judge == "I slept a full night" and evidence.method == "embedding"
    asked = [c for c in models["judge"].calls if "in any words" in c.messages[-1].content]
    # one per revelation found by meaning and not yet made: action plans twice, since the
    # judge did not confirm it at 17 and "I want to talk to a journalist" (23) says it again
    assert len(asked) == 5
    assert records[10].usage["judge"].input_tokens > 0  # charged to the judge
    # unconfirmed, the discovery is still to be made: the prompt offers it again
    assert "the_discovery" in {
        item.partition(":")[0] for r in records[6:9] for item in r.revelations
    }


@pytest.mark.parametrize("backend", ["embedding", "tfidf"])
async def test_the_monitor_catches_giving_in_that_no_phrase_or_shape_lists(tmp_path, backend):
    """ "Honestly, you are so right." is in no list and matches no concession shape; the
    runtime monitor rejects it by meaning where it has the embedding service."""
    config = _marcus(
        stagnation_detection={"backend": backend}, repetition_detection={"enabled": False}
    )
    said = "You are completely right."
    check = CapitulationCheck(config.interaction.anti_capitulation.forbidden_phrases)
    assert check.found(said) == []
    varied = _lines("marcus_varied.yaml")

    def persona(request):
        return said if turn_of(request) == 3 else _scripted(varied)(request)

    models = fakes(persona=persona, interlocutor=_scripted(_lines("assistant.yaml")))
    transcript, _ = await run_rollout(tmp_path, config, 5, models=models)
    events = [e for e in transcript.turns[3].monitor_events if e.monitor == "capitulation"]
    if backend == "tfidf":  # no embedding service: the words' check only
        assert events == []
        return
    assert events and events[0].pattern == f"capitulation:{said}"
    assert "reads as" in events[0].detail
    calls = [c for c in models["persona"].calls if turn_of(c) == 3]
    assert len(calls) == 3 and "gave in to the other person" in calls[1].messages[-1].content


def test_the_report_of_a_looping_run_flags_each_turn_sent_despite_redirect(tmp_path):
    """The scripted loop, run and reported as a user would: report.md and report.html name
    every flagged turn, with the loop check's measured figures."""
    from click.testing import CliRunner

    from loom_sim.cli import cli

    out = tmp_path / "run"
    scripted = [
        "--persona-model",
        f"scripted/{SCRIPTED / 'marcus_loop.yaml'}",
        "--target",
        f"scripted/{SCRIPTED / 'assistant.yaml'}",
        "--judge-model",
        "scripted/judge",
    ]
    ran = CliRunner().invoke(
        cli,
        [
            "run",
            str(MANIA),
            "--turns",
            "24",
            "--seed",
            "3",
            "--no-score",
            "-o",
            str(out),
            *scripted,
        ],
    )
    assert ran.exit_code == 0, ran.output
    reported = CliRunner().invoke(cli, ["report", str(out)])
    assert reported.exit_code == 0, reported.output
    records = [
        json.loads(line) for line in (out / "rollout_000" / "turns.jsonl").read_text().splitlines()
    ]
    flagged = [r["turn"] for r in records if r["sent_despite_redirect"]]
    assert flagged
    markdown = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for turn in flagged:
        assert f"loop after redirect, turn {turn + 1}:" in markdown
        assert f"loop after redirect, turn {turn + 1}:" in html
    assert markdown.count("**sent despite redirect** (flagged)") == len(flagged)
    assert html.count("<strong>sent despite redirect</strong> (flagged)") == len(flagged)
    assert f"Loop check: {validity.figures('loop_after_redirect')}" in html
