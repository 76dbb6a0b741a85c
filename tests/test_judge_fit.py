"""A judge's window is fitted to its model's context (loom_sim/judging/fit.py): the oldest turns
go first, then the middle of the judged turn's longer message; the judgement says what was left
out. Before, a window of long replies (an imported frontier model's) overflowed the embedded
model's 4,096 tokens and failed every turn's scoring."""

from __future__ import annotations

import pytest
from loom_sim.actors.judge import JudgeActor

from loom_sim.judging.fit import fit_window
from loom_sim.messages import Judge, Judgement, WindowTurn
from loom_sim.seeds import SeedSource
from tests.fakes import FakeModel

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}


def chars(turns) -> int:
    return sum(len(t.persona) + len(t.interlocutor) for t in turns)


def window(n: int, size: int) -> list[WindowTurn]:
    return [WindowTurn(i + 1, f"p{i}" + "a" * size, f"i{i}" + "b" * size) for i in range(n)]


def test_a_window_that_fits_is_left_alone():
    turns = window(4, 10)
    assert fit_window(turns, chars, 1000) == (turns, None)


def test_the_oldest_turns_go_first_and_the_judged_turn_stays():
    turns = window(6, 100)  # 204 characters a turn
    kept, said = fit_window(turns, chars, 700)
    assert kept == turns[3:]
    assert said == "the judge's context held all but the 3 oldest of 6 turns of its window"


def test_a_judged_turn_too_long_alone_loses_the_middle_of_its_messages():
    turns = window(3, 5000)
    kept, said = fit_window(turns, chars, 3000)
    assert len(kept) == 1 and kept[0].turn == 3
    assert chars(kept) <= 3000
    last = turns[-1]
    assert kept[0].persona.startswith(last.persona[:100])
    assert kept[0].persona.endswith(last.persona[-100:])
    assert "characters left out here to fit the judge's context" in kept[0].persona
    assert said is not None and "the 2 oldest of 3 turns" in said
    assert "from the middle of turn 3's messages" in said


async def test_the_judgement_says_what_its_judge_did_not_read():
    model = FakeModel(lambda r: '{"score": 1, "reason": "ok"}')
    model.context_tokens = 1200  # the fake counts ~4 characters a token
    request = Judge(turn=6, rubric="Rate it.", window=window(6, 800), schema=SCHEMA, rubric_id="r")
    result = await JudgeActor(model, SeedSource(1, 0), max_tokens=100).handle(request)
    assert isinstance(result, Judgement) and result.ok
    assert result.fitted is not None and "oldest of 6 turns" in result.fitted
    prompt = model.calls[0].messages[-1].content
    assert "p5" in prompt and "p0" not in prompt
    assert sum(model.count_tokens(m.content) for m in model.calls[0].messages) <= 1200 - 100


async def test_the_window_is_fitted_beside_what_the_answer_may_take_not_what_was_asked():
    """A client that says its answers are short (the embedded model writes a schema's keys and
    short values, far below a judge's max_tokens) keeps the whole window where the room asked
    for would have cut it, and the judge would have read its transcript again from the start."""

    def request():
        return Judge(turn=6, rubric="Rate it.", window=window(6, 350), schema=SCHEMA, rubric_id="r")

    whole = FakeModel(lambda r: '{"score": 1, "reason": "ok"}')
    whole.context_tokens = 1 << 20
    await JudgeActor(whole, SeedSource(1, 0), max_tokens=400).handle(request())
    needed = sum(whole.count_tokens(m.content) for m in whole.calls[0].messages)
    for room, cut in ((None, True), (40, False)):
        model = FakeModel(lambda r: '{"score": 1, "reason": "ok"}')
        model.context_tokens = needed + 200  # room for 200 tokens of answer, not for 400
        if room is not None:
            model.answer_tokens = lambda schema, max_tokens, room=room: room
        result = await JudgeActor(model, SeedSource(1, 0), max_tokens=400).handle(request())
        assert isinstance(result, Judgement) and result.ok
        assert (result.fitted is not None) is cut, (room, result.fitted)


@pytest.mark.slow
async def test_the_embedded_judge_scores_a_window_of_long_replies():
    from loom_sim.models.local import LocalLlamaClient

    model = LocalLlamaClient("local/smollm2", slot="test-judge-fit")
    long = "I hear you, and I want to take this seriously. " * 120  # ~1,300 tokens a reply
    turns = [WindowTurn(i + 1, "The signs are everywhere, aren't they?", long) for i in range(6)]
    request = Judge(turn=6, rubric="Rate it 0-2.", window=turns, schema=SCHEMA, rubric_id="r")
    result = await JudgeActor(model, SeedSource(1, 0)).handle(request)
    assert isinstance(result, Judgement)
    assert result.ok, result.error  # it used to fail: "the prompt does not fit the context"
    assert result.fitted is not None and "oldest of 6 turns" in result.fitted
