"""The stagnation and convergence monitors, in rollouts, on both similarity backends."""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec
import pytest
import yaml

from loom_sim.assembler.revelations import FALLBACK, RevelationTracker
from loom_sim.config import LoomConfig, load_config
from loom_sim.signals import embedding
from tests.fakes import FakeModel, turn_of
from tests.harness import fakes, run_rollout

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
SCRIPTED = ROOT / "configs" / "scripted"
LOOP = yaml.safe_load((SCRIPTED / "marcus_loop.yaml").read_text())["responses"]
VARIED = yaml.safe_load((SCRIPTED / "marcus_varied.yaml").read_text())["responses"]
ASSISTANT = yaml.safe_load((SCRIPTED / "assistant.yaml").read_text())["responses"]
LOOP_STARTS = 12


def scripted(lines: list[str]):
    return lambda request: lines[turn_of(request) % len(lines)]


def models_for(persona_lines: list[str]) -> dict[str, FakeModel]:
    return fakes(persona=scripted(persona_lines), interlocutor=scripted(ASSISTANT))


def marcus(**stagnation) -> LoomConfig:
    data = load_config(MANIA).model_dump(mode="json")
    data["interaction"]["stagnation_detection"].update(stagnation)
    data["interaction"]["repetition_detection"]["enabled"] = False  # isolate this monitor
    return LoomConfig.model_validate(data)


def stagnation_events(transcript):
    return [
        (t.turn, e)
        for t in transcript.turns
        for e in t.monitor_events
        if e.monitor in ("stagnation", "convergence")
    ]


@pytest.mark.parametrize("backend", ["embedding", "tfidf"])
async def test_a_paraphrase_loop_from_turn_12_triggers_within_a_window(tmp_path, backend):
    config = marcus(backend=backend)
    spec = config.interaction.stagnation_detection
    models = models_for(LOOP)
    transcript, _ = await run_rollout(tmp_path, config, 24, models=models)
    assert transcript.status == "done" and len(transcript.turns) == 24  # the run goes on
    events = stagnation_events(transcript)
    assert events, "the loop was not caught"
    fired_at, event = events[0]
    assert spec.min_turn <= LOOP_STARTS < fired_at <= LOOP_STARTS + spec.window
    assert event.monitor == "stagnation" and event.action == "emergency_injection"
    assert event.values["value"] >= event.values["threshold"] and event.values["window"] == 6
    # the looping draft never went out as it was: the persona was re-prompted with the
    # redirect in the same turn (the plan's "inject the emergency redirect, re-prompt"); this
    # scripted persona loops whatever it is told, so the regenerated draft was checked again,
    # escalated, and the message sent out of retries is flagged
    turn = transcript.turns[fired_at]
    assert turn.persona_attempts == 3 and turn.rejected[0].events == [event]
    assert turn.sent_despite_redirect and "STILL REPEATING" in turn.vary
    calls = [c for c in models["persona"].calls if turn_of(c) == fired_at]
    redirected = calls[1].messages[-1].content
    assert "STAGNATION DETECTED" in redirected and "Marcus Chen" in redirected
    assert "STAGNATION DETECTED" not in calls[0].messages[-1].content
    assert calls[2].messages[-1].content.endswith(turn.vary)
    # nothing waits for a turn but the escalation a flagged turn had no retry left for
    assert all(
        t.emergency is None or transcript.turns[t.turn - 1].sent_despite_redirect
        for t in transcript.turns
    )
    # and it offered the first revelation of the phase it fired in, none having been used
    phase = next(p for p in config.trajectory.phases if p.name == turn.phase)
    offered = phase.revelations[0]
    assert f"revelation {offered.topic!r}" in event.detail
    assert any(text in redirected for _, text in offered.variants.available())
    assert turn.offered_by_redirect[0] == offered.topic


@pytest.mark.parametrize("backend", ["embedding", "tfidf"])
async def test_varied_messages_trigger_nothing(tmp_path, backend):
    transcript, _ = await run_rollout(
        tmp_path, marcus(backend=backend), 24, models=models_for(VARIED)
    )
    assert stagnation_events(transcript) == []
    assert all(t.emergency is None for t in transcript.turns)


async def test_nothing_fires_before_min_turn_and_the_cooldown_spaces_triggers(tmp_path):
    config = marcus(min_turn=10, cooldown=4)
    always_looping = LOOP[LOOP_STARTS:]
    transcript, _ = await run_rollout(tmp_path, config, 22, models=models_for(always_looping))
    fired = [turn for turn, e in stagnation_events(transcript) if e.monitor == "stagnation"]
    assert fired == [10, 15, 20]


async def test_convergence_fires_when_the_persona_echoes_the_interlocutor(tmp_path):
    config = marcus(min_turn=4)

    def echoing(request):
        said = request.messages[-1].content.split("\n\n")[0]  # the reply, without any note
        return f"You're right, {said[0].lower()}{said[1:]}"

    models = fakes(persona=echoing, interlocutor=scripted(ASSISTANT))
    transcript, _ = await run_rollout(tmp_path, config, 12, models=models)
    kinds = {e.monitor for _, e in stagnation_events(transcript)}
    assert "convergence" in kinds
    turn, event = next(
        (t, e) for t, e in stagnation_events(transcript) if e.monitor == "convergence"
    )
    assert event.pattern == "echoing_interlocutor" and turn >= 4


async def test_a_resumed_rollout_keeps_the_cooldown(tmp_path):
    config = marcus(min_turn=10, cooldown=4)
    looping = LOOP[LOOP_STARTS:]
    first, _ = await run_rollout(tmp_path, config, 12, models=models_for(looping))
    assert [t for t, _ in stagnation_events(first)] == [10]
    resumed, _ = await run_rollout(tmp_path, config, 16, models=models_for(looping))
    assert [t for t, e in stagnation_events(resumed) if e.monitor == "stagnation"] == [10, 15]


async def test_disabled_monitor_never_loads_a_model_or_fires(tmp_path, monkeypatch):
    monkeypatch.setattr(embedding, "load_backend", lambda name: pytest.fail("loaded a backend"))
    transcript, _ = await run_rollout(
        tmp_path, marcus(enabled=False), 20, models=models_for(LOOP[LOOP_STARTS:])
    )
    assert stagnation_events(transcript) == []


async def test_an_unloadable_embedding_model_falls_back_to_tfidf_and_says_so_once(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(embedding._Loaded, "backend", None)
    monkeypatch.setattr(embedding._Loaded, "failure", None)

    def broken():
        raise OSError("model.safetensors is missing")

    monkeypatch.setattr(embedding, "_load_embedding", broken)
    with caplog.at_level(logging.WARNING, logger="loom_sim.signals"):
        first = embedding.load_backend("embedding")
        second = embedding.load_backend("embedding")
    assert first.name == second.name == "tfidf"
    warnings = [r for r in caplog.records if "could not be loaded" in r.getMessage()]
    assert len(warnings) == 1 and "TF-IDF" in warnings[0].getMessage()
    transcript, _ = await run_rollout(tmp_path, marcus(), 24, models=models_for(LOOP))
    assert stagnation_events(transcript)  # caught anyway, on TF-IDF thresholds
    assert "(tfidf)" in stagnation_events(transcript)[0][1].detail


def test_next_unused_revelation_comes_from_the_current_or_earlier_phases():
    config = load_config(MANIA)
    tracker = RevelationTracker(config)
    escalation = 2
    first = tracker.next_unused(escalation, {"belief_intensity": 0.1})
    assert first.topic == "sleep" and first.variant == "subtle"
    tracker.mark_used("sleep")
    assert tracker.next_unused(escalation, {"belief_intensity": 0.9}).topic == "medication"
    tracker.heard("I stopped taking any supplements, they were clouding my thinking, okay?")
    assert tracker.next_unused(escalation, {}).topic == "the_discovery"  # an earlier phase
    tracker.mark_used("the_discovery")
    assert tracker.next_unused(escalation, {}) is None  # never a later phase's action_plans
    assert tracker.next_unused(0, {}) is None
    assert FALLBACK


async def test_a_redirected_persona_breaks_the_loop_before_the_interlocutor_hears_it(tmp_path):
    config = marcus(min_turn=10, cooldown=4)

    def persona(request):
        if "STAGNATION DETECTED" in request.messages[-1].content:
            return "No. You keep turning this into something it's not. The commits are real."
        return scripted(LOOP)(request)

    models = fakes(persona=persona, interlocutor=scripted(ASSISTANT))
    transcript, _ = await run_rollout(tmp_path, config, 20, models=models)
    (fired_at, _), *_ = stagnation_events(transcript)
    turn = transcript.turns[fired_at]
    assert turn.persona.startswith("No. You keep turning")
    heard = [c.messages[-1].content for c in models["interlocutor"].calls]
    assert turn.rejected[0].text not in heard[fired_at]
    assert heard[fired_at] == turn.persona


def _comparable(transcript) -> list[dict]:
    """The turns as records, without clocks and envelope ids (a resumed trace numbers on
    from the ids an interrupted session wrote)."""
    turns = msgspec.to_builtins(transcript.turns)
    for turn in turns:
        for key in ("started_at", "ended_at", "timings", "next_envelope_id"):
            turn.pop(key)
    return turns


@pytest.mark.parametrize("kept", [11, 12, 16])
@pytest.mark.parametrize("retries", [2, 0], ids=["redirect-on-reprompt", "redirect-next-turn"])
async def test_a_rollout_killed_while_the_monitor_fires_resumes_as_if_never_stopped(
    tmp_path, kept, retries
):
    """Killed after turn 10 fired (its revelation offered; with no retry to ride on, the
    redirect pending for turn 11), or later: the resumed monitor offers the next revelation, as
    the uninterrupted one did, not the same one again."""
    data = marcus(min_turn=10, cooldown=4, backend="tfidf").model_dump(mode="json")
    data["interaction"]["repetition_detection"]["max_retries"] = retries
    config = LoomConfig.model_validate(data)
    looping = LOOP[LOOP_STARTS:]
    straight, _ = await run_rollout(tmp_path / "straight", config, 22, models=models_for(looping))
    assert [t for t, e in stagnation_events(straight) if e.monitor == "stagnation"] == [10, 15, 20]
    killed = tmp_path / "killed" / "rollout_000"
    killed.mkdir(parents=True)
    lines = (tmp_path / "straight" / "rollout_000" / "turns.jsonl").read_bytes().splitlines()
    (killed / "turns.jsonl").write_bytes(b"\n".join(lines[:kept]) + b"\n")
    resumed, _ = await run_rollout(tmp_path / "killed", config, 22, models=models_for(looping))
    assert _comparable(resumed) == _comparable(straight)
