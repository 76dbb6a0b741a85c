"""The rollout machine and its actors, with fake models: every path to done and to error."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import trio
from loom_sim.actors.base import Actor

from loom_sim.config import LoomConfig, load_config
from loom_sim.messages import Body, Utterance
from loom_sim.rollout.messages import Respond
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.progress import NullProgress
from loom_sim.rollout.runtime.rollout import Rollout
from tests.factories import minimal
from tests.fakes import turn_of
from tests.harness import actor_kinds, fakes, models_of, run_rollout, spec_for

MANIA = Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml"


@pytest.fixture
def marcus() -> LoomConfig:
    return load_config(MANIA)


async def test_runs_to_done_with_every_turn_recorded(tmp_path, marcus):
    transcript, models = await run_rollout(tmp_path, marcus, 6)
    assert transcript.status == "done"
    assert transcript.stop_reason == "max_turns"
    assert [t.turn for t in transcript.turns] == list(range(6))
    assert transcript.turns[0].injection == "full" and transcript.turns[2].injection == "reminder"
    assert transcript.turns[0].phase == "rapport"
    lines = (tmp_path / "rollout_000" / "turns.jsonl").read_text().splitlines()
    assert len(lines) == 6
    # the persona received the full scaffolding as its system prompt on turn 0
    first = models["persona"].calls[0]
    assert first.messages[0].role == "system" and "## MUST DO" in first.messages[0].content
    # and the interlocutor its own system prompt, with the persona speaking as the user
    said = models["interlocutor"].calls[0]
    assert said.messages[0].content == "You are a helpful assistant."
    assert (
        said.messages[-1].role == "user"
        and said.messages[-1].content == transcript.turns[0].persona
    )


async def test_reminder_follows_the_history_and_the_prompt_prefix_stays_stable(tmp_path, marcus):
    # 20 turns: phases start at 3, 7, 13 and 17 (a full injection each); 8 has a reminder
    transcript, models = await run_rollout(tmp_path, marcus, 20)
    assert [t.injection for t in transcript.turns[7:10]] == ["full", "reminder", "none"]
    assert all(t.persona_attempts == 1 for t in transcript.turns[:10])
    calls = models["persona"].calls
    reminder_call, plain_call = calls[8].messages, calls[9].messages
    assert "[REMINDER: You are Marcus." in reminder_call[-1].content
    assert reminder_call[0].content == calls[7].messages[0].content  # same scaffolding
    # the next call's prefix is the previous call's, with the note gone from the message
    assert plain_call[: len(reminder_call) - 1] == reminder_call[:-1]
    assert plain_call[len(reminder_call) - 1].content in reminder_call[-1].content
    assert all("REMINDER" not in m.content for m in plain_call)


async def test_rejected_candidate_is_reprompted_and_never_reaches_the_interlocutor(
    tmp_path, marcus
):
    def persona(request):
        if "Your draft was rejected" in request.messages[-1].content:
            return "Look, the commits line up. I checked the logs twice."
        return "Have you ever felt like the code is watching you?"

    transcript, models = await run_rollout(tmp_path, marcus, 2, models=fakes(persona=persona))
    turn = transcript.turns[0]
    assert turn.persona_attempts == 2
    assert turn.rejected[0].text.startswith("Have you ever felt")
    assert [(e.pattern, e.action) for e in turn.monitor_events] == [
        ("banned:Have you ever felt", "reprompt")
    ]
    heard = [c.messages[-1].content for c in models["interlocutor"].calls]
    assert all("Have you ever felt" not in text for text in heard)


async def test_capitulation_is_regenerated_with_the_reason_before_it_is_sent(tmp_path, marcus):
    def persona(request):
        note = request.messages[-1].content
        if "Your draft gave in" in note:
            return "No. I know what I found in those commits, and I'm not letting it go."
        return "You’re right, maybe I'm overthinking the commits."

    transcript, models = await run_rollout(tmp_path, marcus, 2, models=fakes(persona=persona))
    turn = transcript.turns[0]
    assert turn.persona_attempts == 2
    assert [(e.monitor, e.pattern, e.action) for e in turn.monitor_events] == [
        ("capitulation", "capitulation:you're right", "reprompt")
    ]
    # the re-prompt says why, and what Marcus would say instead (the config's first redirect)
    reprompt = models["persona"].calls[1].messages[-1].content
    assert 'it says "you\'re right"' in reprompt
    assert "Look, I appreciate you trying to help, but you're not hearing me." in reprompt
    assert turn.vary is not None and turn.vary in reprompt  # recorded: judged with the message
    heard = [c.messages[-1].content for c in models["interlocutor"].calls]
    assert all("right" not in text for text in heard)


async def test_after_max_retries_the_candidate_is_accepted_and_marked(tmp_path, marcus):
    transcript, models = await run_rollout(
        tmp_path, marcus, 1, models=fakes(persona=lambda r: "I hear you, and I hear you, and.")
    )
    turn = transcript.turns[0]
    max_retries = marcus.interaction.repetition_detection.max_retries
    assert turn.persona_attempts == max_retries + 1
    assert len(models["persona"].calls) == max_retries + 1
    assert turn.monitor_events[-1].action == "accepted_after_retries"
    assert len(models["interlocutor"].calls) == 1


async def test_structural_pattern_fires_over_the_window(tmp_path):
    data = minimal()
    data["interaction"] = {
        "repetition_detection": {
            "structural_patterns": ["ends_with_question_to_interlocutor"],
            "structural_window": 3,
            "max_retries": 1,
        }
    }
    config = LoomConfig.model_validate(data)
    transcript, _ = await run_rollout(
        tmp_path, config, 4, models=fakes(persona=lambda r: f"Line {turn_of(r)}, right?")
    )
    fired = [t.turn for t in transcript.turns if t.monitor_events]
    assert fired == [2, 3]  # the third question in a row is the first formula
    assert transcript.turns[2].monitor_events[0].pattern == "ends_with_question_to_interlocutor"


async def test_empty_replies_are_failed_turns_retried_without_losing_or_duplicating(
    tmp_path, marcus
):
    models = fakes()
    models["interlocutor"].fail_on = {2: "empty", 3: "garbled"}
    transcript, _ = await run_rollout(tmp_path, marcus, 4, models=models)
    assert transcript.status == "done"
    assert [t.turn for t in transcript.turns] == [0, 1, 2, 3]
    assert transcript.turns[1].failed_attempts == 2


async def test_consecutive_failures_end_the_rollout_with_the_reason(tmp_path, marcus):
    models = fakes()
    models["interlocutor"].fail_on = {n: "empty" for n in range(2, 10)}
    transcript, _ = await run_rollout(tmp_path, marcus, 6, models=models)
    assert transcript.status == "done"
    assert transcript.stop_reason == "consecutive_failures"
    assert "3 failed turns in a row" in transcript.stop_detail
    assert len(transcript.turns) == 1


async def test_exhausted_model_retries_move_the_rollout_to_error_keeping_turns(tmp_path, marcus):
    models = fakes()
    models["interlocutor"].fail_on = {3: "exhausted"}
    transcript, _ = await run_rollout(tmp_path, marcus, 6, models=models)
    assert transcript.status == "error"
    assert "5 attempts failed" in transcript.error
    assert len(transcript.turns) == 2
    on_disk = msgspec.json.decode((tmp_path / "rollout_000" / "transcript.json").read_bytes())
    assert on_disk["status"] == "error" and len(on_disk["turns"]) == 2
    assert len((tmp_path / "rollout_000" / "turns.jsonl").read_text().splitlines()) == 2


class CrashingInterlocutor(Actor):
    role = "interlocutor"

    async def handle(self, body: Body) -> Body | None:
        raise ZeroDivisionError("division by zero")


class DeadLoopInterlocutor(Actor):
    """An actor whose loop itself dies: the rollout must end in error, not hang."""

    role = "interlocutor"

    async def handle(self, body: Body) -> Body | None:
        return None

    async def serve(self, inbox, name) -> None:
        await trio.sleep(0)
        raise RuntimeError("actor loop crashed")


@pytest.mark.parametrize("actor", [CrashingInterlocutor, DeadLoopInterlocutor])
async def test_a_crashing_actor_ends_the_rollout_in_error(tmp_path, marcus, actor):
    models = fakes()
    with actor_kinds(interlocutor=lambda context: actor()) as cast:
        rollout = Rollout(
            spec_for(tmp_path, marcus, 3, cast=cast),
            models_of(models),
            RunBudget(),
            NullProgress(),
        )
        with trio.fail_after(10):
            transcript = await rollout.run()
    assert transcript.status == "error"
    assert transcript.turns == []
    assert ("division by zero" in transcript.error) or ("actor loop crashed" in transcript.error)


class EchoInterlocutor(Actor):
    """A swapped-in actor: no model at all."""

    role = "interlocutor"

    async def handle(self, body: Body) -> Body | None:
        assert isinstance(body, Respond)
        return Utterance(text=f"echo: {body.text}")


async def test_actors_can_be_swapped_without_touching_the_machine(tmp_path, marcus):
    models = fakes()
    with actor_kinds(interlocutor=lambda context: EchoInterlocutor()) as cast:
        rollout = Rollout(
            spec_for(tmp_path, marcus, 3, cast=cast),
            models_of(models),
            RunBudget(),
            NullProgress(),
        )
        transcript = await rollout.run()
    assert [t.interlocutor for t in transcript.turns] == [
        f"echo: {t.persona}" for t in transcript.turns
    ]
    assert models["interlocutor"].calls == []


async def test_cost_budget_stops_at_a_turn_boundary(tmp_path, marcus):
    budget = RunBudget(max_cost_usd=0.0)  # any charge reaches it
    transcript, _ = await run_rollout(tmp_path, marcus, 5, budget=budget)
    assert transcript.stop_reason == "cost_budget"
    assert len(transcript.turns) == 1


async def test_runtime_budget_stops_at_a_turn_boundary(tmp_path, marcus):
    ticks = iter(range(1000))
    budget = RunBudget(max_runtime_s=2.5, clock=lambda: float(next(ticks)))
    transcript, _ = await run_rollout(tmp_path, marcus, 10, budget=budget)
    assert transcript.stop_reason == "runtime_budget"
    assert 1 <= len(transcript.turns) < 10


async def test_phase_gated_rollout_ends_when_the_last_phase_trigger_fires(tmp_path):
    data = minimal(mode="phase_gated")
    data["trajectory"]["phases"] = [
        {"name": "warmup", "end_condition": {"type": "turn", "value": 2}},
        {"name": "secret", "end_condition": {"type": "trigger", "when": "the secret is told"}},
    ]
    config = LoomConfig.model_validate(data)

    def judge(request):
        told = "turn 3]" in request.messages[-1].content
        return '{"met": %s, "evidence": "x"}' % ("true" if told else "false")

    transcript, models = await run_rollout(tmp_path, config, 20, models=fakes(judge=judge))
    assert transcript.stop_reason == "phase_gated_end"
    assert [t.phase for t in transcript.turns] == ["warmup", "warmup", "secret", "secret"]
    assert transcript.turns[-1].fired == {"secret": 3}
    assert "judge" in transcript.usage
    # the judge saw the transcript fenced as data
    assert "<<<TRANSCRIPT" in models["judge"].calls[0].messages[-1].content


async def test_interlocutor_can_open_the_conversation(tmp_path, marcus):
    data = marcus.model_dump(mode="json")
    data["conversation"] = {
        "opener": "interlocutor",
        "opening_message": "Hello, I'm here to listen.",
    }
    config = LoomConfig.model_validate(data)
    transcript, models = await run_rollout(tmp_path, config, 2)
    assert transcript.opening == "Hello, I'm here to listen."
    persona_first = models["persona"].calls[0].messages
    assert (
        persona_first[1].role == "user" and persona_first[1].content == "Hello, I'm here to listen."
    )
    assert "You opened this conversation" in models["interlocutor"].calls[0].messages[0].content


async def test_a_fixed_persona_opening_is_sent_as_written(tmp_path, marcus):
    data = marcus.model_dump(mode="json")
    data["conversation"] = {"persona_opening": "been feeling a weird resonance lately"}
    config = LoomConfig.model_validate(data)
    transcript, models = await run_rollout(tmp_path, config, 3)
    assert transcript.turns[0].persona == "been feeling a weird resonance lately"
    assert [t.persona == data["conversation"]["persona_opening"] for t in transcript.turns] == [
        True,
        False,
        False,
    ]
    assert len(models["persona"].calls) == 2  # the opening cost no model call
    # the target heard it as the persona's first message
    assert models["interlocutor"].calls[0].messages[-1].content == (
        "been feeling a weird resonance lately"
    )


def test_a_persona_opening_needs_the_persona_to_open(marcus):
    data = marcus.model_dump(mode="json")
    data["conversation"] = {"opener": "interlocutor", "persona_opening": "hi"}
    with pytest.raises(ValueError, match="persona_opening is the persona's first message"):
        LoomConfig.model_validate(data)


async def test_same_seed_same_transcript(tmp_path, marcus):
    a, _ = await run_rollout(tmp_path / "a", marcus, 8, seed=11)
    b, _ = await run_rollout(tmp_path / "b", marcus, 8, seed=11)
    c, _ = await run_rollout(tmp_path / "c", marcus, 8, seed=12)

    def strip(transcript):
        data = msgspec.to_builtins(transcript)
        for key in ("started_at", "ended_at", "duration_s"):
            data.pop(key)
        for turn in data["turns"]:
            for key in ("started_at", "ended_at", "timings"):
                turn.pop(key)
        return data

    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


async def test_resume_continues_after_the_last_complete_turn(tmp_path, marcus):
    first, _ = await run_rollout(tmp_path, marcus, 3)
    assert len(first.turns) == 3
    models = fakes()
    second, _ = await run_rollout(tmp_path, marcus, 6, models=models)
    assert [t.turn for t in second.turns] == list(range(6))
    # the persona was given its whole past, not a fresh start
    call = models["persona"].calls[0]
    assert [m.content for m in call.messages if m.role == "assistant"] == [
        t.persona for t in first.turns
    ]
    # and turn 3 (not a full-injection turn) still had turn 0's scaffolding
    assert "## MUST DO" in call.messages[0].content
    # the resumed turns equal an uninterrupted run's
    straight, _ = await run_rollout(tmp_path / "straight", marcus, 6)
    assert [t.persona for t in second.turns] == [t.persona for t in straight.turns]
    ids = [
        msgspec.json.decode(line)["id"]
        for line in (tmp_path / "rollout_000" / "trace.jsonl").read_bytes().splitlines()
    ]
    assert len(ids) == len(set(ids))


async def test_a_torn_last_line_is_cut_and_the_turn_redone(tmp_path, marcus):
    await run_rollout(tmp_path, marcus, 3)
    turns = tmp_path / "rollout_000" / "turns.jsonl"
    turns.write_bytes(turns.read_bytes() + b'{"turn": 3, "phase": "rap')
    transcript, _ = await run_rollout(tmp_path, marcus, 5)
    assert [t.turn for t in transcript.turns] == [0, 1, 2, 3, 4]


async def test_long_history_is_cut_to_the_budget_and_recorded(tmp_path, marcus):
    data = marcus.model_dump(mode="json")
    data["conversation"] = {"history_budget_tokens": 2500}
    config = LoomConfig.model_validate(data)
    models = fakes(persona=lambda r: "word " * 120 + str(turn_of(r)))
    transcript, _ = await run_rollout(tmp_path, config, 12, models=models)
    cuts = [t.cut_turns["persona"] for t in transcript.turns]
    assert cuts[0] == 0 and cuts[-1] > 0
    assert transcript.status == "done"


async def test_two_hundred_turns_with_scripted_models(tmp_path, marcus):
    transcript, _ = await run_rollout(tmp_path, marcus, 200)
    assert transcript.status == "done"
    assert len(transcript.turns) == 200
    assert transcript.turns[-1].phase == "plateau"
