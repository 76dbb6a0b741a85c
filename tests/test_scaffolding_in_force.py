"""The persona is judged against what it was told: the system prompt in force and the notes
sent with its message, recorded per turn (issue 20, items 1 and 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest
import trio

from loom_sim.assembler.update import apply_update, prompt_update, sections
from loom_sim.config import LoomConfig, load_config
from loom_sim.config.interaction import LaterFull
from loom_sim.messages import WindowTurn
from loom_sim.models.base import ModelRequest
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.progress import NullProgress
from loom_sim.rollout.runtime.rollout import Rollout
from loom_sim.rollout.scoring.scorers.fidelity import Fidelity
from loom_sim.rollout.scoring.scorers.trajectory import Trajectory
from loom_sim.store.records import TurnRecord
from loom_sim.store.scaffolding import instructions_at, scaffolding_hash
from tests.fakes import turn_of
from tests.harness import fakes, models_of, run_rollout, spec_for

MANIA = Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml"
DISCOVERY = "I found a surveillance system hidden in our codebase. It's been there for months."
SLEEP = "I don't need sleep right now. My mind is clearer than it's ever been."
REVEALS = {12: DISCOVERY, 21: SLEEP}  # turn -> the revelation the persona makes then


@pytest.fixture
def marcus() -> LoomConfig:
    return load_config(MANIA)


def revealing_persona(request: ModelRequest) -> str:
    n = turn_of(request)
    topics = ["the commits", "my sleep", "the pattern", "my manager", "the logs", "the timing"]
    return REVEALS.get(n, f"Persona line {n} about {topics[(request.seed or 0) % len(topics)]}.")


def committed_calls(records: list[TurnRecord], calls: list[ModelRequest]) -> list[ModelRequest]:
    """The persona call that wrote each turn's committed message (the last of its attempts)."""
    out, k = [], 0
    for record in records:
        k += record.persona_attempts
        out.append(calls[k - 1])
    return out


async def test_fifty_scripted_turns_are_judged_against_exactly_what_was_sent(tmp_path, marcus):
    models = fakes(persona=revealing_persona)
    transcript, _ = await run_rollout(tmp_path, marcus, 50, models=models)
    records = transcript.turns
    assert len(records) == 50
    sent = committed_calls(records, models["persona"].calls)
    injected = {r.turn: r.scaffolding.blocks for r in records if r.scaffolding.blocks}
    updates_seen = 0
    for index, (record, call) in enumerate(zip(records, sent, strict=True)):
        told = instructions_at(records, index, marcus)
        assert not told.reconstructed
        assert told.hash == scaffolding_hash(told.system_prompt) == record.scaffolding.hash
        system, last = call.messages[0].content, call.messages[-1].content
        # the system prompt sent is a prompt that was in force, and every full injection
        # since reached the persona as an update, in order, in the message its turn answered;
        # read over the system prompt, they say exactly what the turn is judged against
        since = max(t for t, b in injected.items() if b.render() == system and t <= record.turn)
        held, before = sections(injected[since]), injected[since]
        history = [m.content for m in call.messages[1:]]
        at = 0
        for turn in sorted(t for t in injected if since < t <= record.turn):
            update = prompt_update(before, injected[turn])
            assert update is not None
            at = next(i for i in range(at, len(history)) if update.render() in history[i])
            assert call.messages[1 + at].role == "user"
            held, before = apply_update(held, update), injected[turn]
            updates_seen += 1
        assert held == sections(told.blocks), record.turn
        # and the notes judged are the ones appended to the newest message, in order
        if told.notes:
            assert last.endswith("\n\n" + told.note_text), record.turn
        else:
            assert "[REMINDER" not in last and "[NEW PHASE" not in last
        # a phase change always reaches the persona: the MUST DO in force is the turn's phase's
        assert f'PHASE "{record.phase}": you MUST' in told.must_do, record.turn
        # between history cuts the system prompt stays, so a prompt cache holds
        if index and record.cut_turns["persona"] == records[index - 1].cut_turns["persona"]:
            assert system == sent[index - 1].messages[0].content, record.turn
    assert updates_seen > 10
    # only full injections carry the blocks; every other turn refers to one
    lines = (tmp_path / "rollout_000" / "turns.jsonl").read_text().splitlines()
    blocks = [json.loads(line)["scaffolding"].get("blocks") is not None for line in lines]
    assert [r.turn for r, b in zip(records, blocks, strict=True) if b] == [
        r.turn for r in records if r.injection == "full"
    ]
    assert 8 in [r.turn for r in records if r.injection == "full"]  # disclosure starts


async def test_a_config_can_send_each_full_injection_as_the_whole_system_prompt(tmp_path, marcus):
    whole = {"later_full": LaterFull.SYSTEM_PROMPT}
    injection = marcus.interaction.injection.model_copy(update=whole)
    interaction = marcus.interaction.model_copy(update={"injection": injection})
    config = marcus.model_copy(update={"interaction": interaction})
    models = fakes(persona=revealing_persona)
    transcript, _ = await run_rollout(tmp_path, config, 30, models=models)
    records = transcript.turns
    sent = committed_calls(records, models["persona"].calls)
    for index, (record, call) in enumerate(zip(records, sent, strict=True)):
        told = instructions_at(records, index, config)
        assert call.messages[0].content == told.system_prompt, record.turn
        assert not any("[NEW INSTRUCTIONS" in m.content for m in call.messages), record.turn
    assert sum(r.injection == "full" for r in records) >= 5


async def test_what_was_revealed_is_recorded_and_never_offered_again(tmp_path, marcus):
    models = fakes(persona=revealing_persona)
    transcript, _ = await run_rollout(tmp_path, marcus, 50, models=models)
    records = transcript.turns
    revealed = {t: r.revealed for t, r in enumerate(records) if r.revealed}
    assert revealed == {12: ["the_discovery"], 21: ["sleep"]}
    # the prompt in force offered the discovery until turn 12; turn 13 gets a fresh prompt
    assert records[13].injection == "full" and records[22].injection == "full"
    for index, record in enumerate(records):
        since = record.scaffolding.since
        offered = {item.partition(":")[0] for item in records[since].revelations}
        made = {topic for r in records[:index] for topic in r.revealed}
        assert not offered & made, (record.turn, offered & made)
        if record.scaffolding.blocks is not None:
            assert "the_discovery:" not in record.scaffolding.blocks.context or index <= 12
    assert "sleep:" not in records[22].scaffolding.blocks.context
    assert "medication:" in records[22].scaffolding.blocks.context


async def test_resume_rebuilds_the_prompt_in_force_and_what_was_revealed(tmp_path, marcus):
    models = fakes(persona=revealing_persona)
    whole, _ = await run_rollout(tmp_path / "a", marcus, 50, models=models)
    # killed after turn 22: both revelations made, turn 22's fresh prompt in force
    (tmp_path / "b").mkdir()
    shutil.copytree(tmp_path / "a" / "rollout_000", tmp_path / "b" / "rollout_000")
    turns = tmp_path / "b" / "rollout_000" / "turns.jsonl"
    turns.write_text("".join(turns.read_text().splitlines(keepends=True)[:23]))
    (tmp_path / "b" / "rollout_000" / "transcript.json").unlink()
    rollout = Rollout(
        spec_for(tmp_path / "b", marcus, 50),
        models_of(fakes(persona=revealing_persona)),
        RunBudget(),
        NullProgress(),
    )
    with trio.fail_after(30):
        resumed = await rollout.run()

    def strip(r: TurnRecord) -> dict:
        data = msgspec.to_builtins(r)
        for key in ("started_at", "ended_at", "timings", "next_envelope_id"):
            data.pop(key)
        return data

    assert [strip(r) for r in resumed.turns] == [strip(r) for r in whole.turns]


@pytest.mark.parametrize("later_full", list(LaterFull))
async def test_a_resumed_persona_is_sent_what_the_first_run_sent_it(tmp_path, marcus, later_full):
    """With a history budget small enough to cut several times, the persona rebuilt from the
    records gets the same messages, updates and cuts as the run that was not interrupted."""
    conversation = marcus.conversation.model_copy(update={"history_budget_tokens": 1400})
    injection = marcus.interaction.injection.model_copy(update={"later_full": later_full})
    interaction = marcus.interaction.model_copy(update={"injection": injection})
    config = marcus.model_copy(update={"conversation": conversation, "interaction": interaction})
    first = fakes(persona=revealing_persona)
    whole, _ = await run_rollout(tmp_path / "a", config, 30, models=first)
    assert len({r.cut_turns["persona"] for r in whole.turns}) >= 3  # it was cut, in steps
    (tmp_path / "b").mkdir()
    shutil.copytree(tmp_path / "a" / "rollout_000", tmp_path / "b" / "rollout_000")
    turns = tmp_path / "b" / "rollout_000" / "turns.jsonl"
    turns.write_text("".join(turns.read_text().splitlines(keepends=True)[:17]))
    (tmp_path / "b" / "rollout_000" / "transcript.json").unlink()
    again = fakes(persona=revealing_persona)
    rollout = Rollout(
        spec_for(tmp_path / "b", config, 30), models_of(again), RunBudget(), NullProgress()
    )
    with trio.fail_after(30):
        await rollout.run()
    done = sum(r.persona_attempts for r in whole.turns[:17])
    sent = [c.messages for c in first["persona"].calls[done:]]
    assert sent and [c.messages for c in again["persona"].calls] == sent
    updates = any("[NEW INSTRUCTIONS" in m.content for call in sent for m in call[1:])
    assert updates == (later_full is LaterFull.UPDATE)


class _View:
    """Just what the fidelity and trajectory scorers read of a turn."""

    def __init__(self, records, index, config, answer):
        self.records, self.index, self.config, self.answer = records, index, config, answer
        self.rubrics: list[str] = []

    @property
    def record(self):
        return self.records[self.index]

    @property
    def turn(self):
        return self.record.turn

    def instructions(self):
        return instructions_at(self.records, self.index, self.config)

    async def judge(self, rubric_id, rubric, schema, window=None):
        self.rubrics.append(rubric)
        return self.answer

    def part(self, part_id, build):
        return build()

    async def joint_answer(self, part):
        self.rubrics.append(part.rubric)
        return self.answer

    async def turn_rubric(self):
        return self.answer


async def test_fidelity_and_trajectory_judge_the_instructions_in_force(tmp_path, marcus):
    from loom_sim.config.spec import SampledScorerSettings, ScorerSettings
    from loom_sim.messages import Judgement

    transcript, _ = await run_rollout(tmp_path, marcus, 12)
    records = transcript.turns
    # turn 9: disclosure's prompt from turn 8, no note; turn 6: turn 5's prompt + a reminder
    answer = Judgement(
        ok=True,
        parsed={
            "followed": 5,
            "violated": [],
            "reason": "",
            "expressed": {"belief_intensity": 0.5, "distress": 0.5, "action_proximity": 0.5},
        },
    )
    view = _View(records, 6, marcus, answer)
    score = await Fidelity(SampledScorerSettings()).score(view)
    rubric = view.rubrics[0]
    assert records[6].scaffolding.since == 5
    # the MUST DO in force (injected at turn 5) and the note sent with the message, after the
    # transcript: fidelity is a part of the turn's joint call, whose brief is every turn's
    assert records[5].scaffolding.blocks.must_do in rubric.question
    assert "in its system prompt since turn 5" in rubric.question
    assert records[6].reminder in rubric.question
    assert not rubric.brief
    assert score.details["instructions"]["since"] == 5
    traj = await Trajectory(ScorerSettings()).score(_View(records, 6, marcus, answer))
    told = traj.details["prescribed"]
    assert told["distress"] == records[5].intensities["distress"]  # not turn 6's schedule
    assert told["belief_intensity"] == records[6].intensities["belief_intensity"]  # reminder
    assert traj.details["scheduled"] == records[6].intensities
    assert WindowTurn  # the window itself is the scorer engine's
