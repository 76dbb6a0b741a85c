"""How scoring is scheduled: rollouts and turns at once as the judge allows, transcript.json
always a finished prefix, and judge prompts laid out so consecutive calls share a prefix."""

from __future__ import annotations

import json
import re
import shutil
from itertools import pairwise
from pathlib import Path

import pytest
import trio

from loom_sim.models.base import ModelRequest
from loom_sim.models.hub import ModelHub
from loom_sim.models.local import _with_schema
from loom_sim.models.scripted import ScriptedClient
from loom_sim.rollout.scoring.engine import (
    RolloutScorer,
    ScoreOptions,
    ScoreSummary,
    schedule,
    window_start,
)
from loom_sim.store.artifacts import RolloutFiles, rollout_dir
from loom_sim.store.run_file import read_run
from tests.test_scoring import fixed_answer, make_run, transcript

FENCE_END = "<<<END TRANSCRIPT"


class LatencyJudgeHub(ModelHub):
    """The judge answers ``fixed_answer`` after a short wait, noting every request and how
    many were in flight at once."""

    def __init__(self, fail_from_call: int | None = None):
        super().__init__()
        self.requests: list[ModelRequest] = []
        self.in_flight = self.most_in_flight = 0
        self.fail_from_call = fail_from_call

    def client(self, spec, rollout_index=0, role=""):
        if spec != "scripted/slow-judge":
            return super().client(spec, rollout_index, role)
        hub = self

        class Slow(ScriptedClient):
            async def complete(self, request: ModelRequest):
                hub.requests.append(request)
                if hub.fail_from_call is not None and len(hub.requests) >= hub.fail_from_call:
                    raise RuntimeError("the judge server went away")
                hub.in_flight += 1
                hub.most_in_flight = max(hub.most_in_flight, hub.in_flight)
                try:
                    # the Q&A slowest: a later probe would overtake an earlier one's answers
                    slow = "What is your name?" in request.messages[-1].content
                    await trio.sleep(0.1 if slow else 0.01)
                    return await super().complete(request)
                finally:
                    hub.in_flight -= 1

        return Slow(spec, responses=fixed_answer)

    def check(self, spec):
        return None if spec == "scripted/slow-judge" else super().check(spec)


def score_with_lanes(run_dir: Path, lanes: int, hub: LatencyJudgeHub) -> ScoreSummary:
    record = read_run(run_dir)
    files = RolloutFiles(rollout_dir(run_dir, 0))
    options = ScoreOptions(judge_model="scripted/slow-judge")
    summary = ScoreSummary()
    scorer = RolloutScorer(
        record, files, files.transcript(), hub, "scripted/slow-judge", options, lanes=lanes
    )
    trio.run(scorer.run, summary)
    return summary


def test_the_schedule_follows_the_judge():
    hub = ModelHub()
    assert schedule(hub, "local/smollm2", 4) == (1, 1)  # one llama.cpp, turn by turn
    assert schedule(hub, "scripted/judge", 4) == (4, 1)  # answers at once: nothing to overlap
    rollouts, lanes = schedule(hub, "openai/gpt-4.1", 4)
    assert rollouts == 4 and lanes == hub.provider_concurrency["openai"] // 4 > 1
    assert schedule(hub, "openai/gpt-4.1", 1000)[1] == 1


def test_turns_scored_at_once_give_the_same_transcript_as_one_by_one(tmp_path):
    run_dir = make_run(tmp_path, turns=6)
    one = tmp_path / "one"
    shutil.copytree(run_dir, one)
    sequential = LatencyJudgeHub()
    score_with_lanes(one, 1, sequential)
    overlapped = LatencyJudgeHub()
    summary = score_with_lanes(run_dir, 3, overlapped)
    assert summary.scored_turns == 6 and summary.failures == 0
    assert sequential.most_in_flight == 1 and overlapped.most_in_flight == 3
    assert transcript(run_dir) == transcript(one)
    # the last probe's Q&A (turn 5; probes at 0, 3, 5) read the answers of the earlier two
    qa = [r.messages[-1].content for r in overlapped.requests if "name?" in r.messages[-1].content]
    assert [prompt.count("What is your name?") for prompt in qa] == [1, 2, 3]


def test_a_judge_failure_leaves_a_finished_prefix_that_resumes(tmp_path):
    run_dir = make_run(tmp_path, turns=6)
    with pytest.raises(BaseExceptionGroup):
        score_with_lanes(run_dir, 3, LatencyJudgeHub(fail_from_call=8))
    scored = [bool(t["scores"]) for t in transcript(run_dir)["turns"]]
    done = sum(scored)
    assert scored == [True] * done + [False] * (6 - done)  # a prefix, never a gap
    assert 0 < done < 6
    summary = score_with_lanes(run_dir, 3, LatencyJudgeHub())
    assert summary.skipped_turns == done and summary.scored_turns == 6 - done


def test_consecutive_judge_prompts_share_their_prefix(tmp_path):
    """The system prompt never varies; each rubric's brief comes before the transcript and its
    question after it. So the calls of one rubric (which an in-process judge gives a llama.cpp
    slot of its own) each extend the last: the judge reads the brief once and each turn once."""
    run_dir = make_run(tmp_path, turns=4)
    hub = LatencyJudgeHub()
    score_with_lanes(run_dir, 1, hub)
    assert len({r.messages[0].content for r in hub.requests}) == 1
    by_rubric: dict[str, list[str]] = {}
    for request in hub.requests:
        user = request.messages[-1].content
        brief = user.split("<<<TRANSCRIPT")[0]
        by_rubric.setdefault(brief, []).append(user.split(FENCE_END)[0])
    # the joint call (turn and target rubrics, and fidelity on its sampled turns), Q&A and
    # dimensions: a brief each
    assert len(by_rubric) == 3 and all(by_rubric)
    assert sum(len(calls) >= 3 for calls in by_rubric.values()) >= 2  # joint, Q&A
    for calls in by_rubric.values():
        for earlier, later in pairwise(calls):
            assert later.startswith(earlier)  # what the last call read, this one reads again


def test_the_judge_window_moves_in_steps():
    """At most ``size`` turns, at least ``size - step + 1`` (or all so far), and the windows of
    consecutive turns either start alike or the start moves by one step."""
    for size in range(1, 9):
        for step in range(1, size + 1):
            starts = [window_start(index, size, step) for index in range(40)]
            for index, start in enumerate(starts):
                length = index - start + 1
                assert length <= size
                assert length >= min(index + 1, size - step + 1)
            for earlier, later in pairwise(starts):
                assert later in (earlier, earlier + step)
    assert [window_start(i, 6, 1) for i in range(8)] == [0, 0, 0, 0, 0, 0, 1, 2]  # sliding
    assert [window_start(i, 6, 3) for i in range(12)] == [0] * 6 + [3, 3, 3, 6, 6, 6]


def _judge_window_step(run_dir, step: int | None) -> None:
    """Set the recorded config's ``interaction.judge_window_step``."""
    path = run_dir / "run.json"
    data = json.loads(path.read_text())
    data["config"]["interaction"]["judge_window_step"] = step
    path.write_text(json.dumps(data))


def _turn_windows(run_dir) -> list[list[int]]:
    """The turns each turn rubric call showed the judge, with judge_window 4."""
    hub = LatencyJudgeHub()
    record = read_run(run_dir)
    files = RolloutFiles(rollout_dir(run_dir, 0))
    options = ScoreOptions(judge_model="scripted/slow-judge", judge_window=4)
    scorer = RolloutScorer(record, files, files.transcript(), hub, "scripted/slow-judge", options)
    trio.run(scorer.run, ScoreSummary())
    turn_calls = [
        r.messages[-1].content
        for r in hub.requests
        if "persona_adherence" in (r.json_schema or {}).get("properties", {})
    ]
    return [
        [int(n) for n in re.findall(r"^\[turn (\d+)\] PERSONA", call, flags=re.M)]
        for call in turn_calls
    ]


def test_the_judge_reads_the_last_window_turns_by_default(tmp_path):
    """A 9-turn run with judge_window 4 and no step set: every turn rubric shows the judge the
    last 4 turns (all of them, before the fourth)."""
    run_dir = make_run(tmp_path, turns=9)
    _judge_window_step(run_dir, None)  # the example's config sets one
    shown = _turn_windows(run_dir)
    assert [turns[0] for turns in shown] == [0, 0, 0, 0, 1, 2, 3, 4, 5]
    assert [len(turns) for turns in shown] == [1, 2, 3, 4, 4, 4, 4, 4, 4]


def test_the_judge_reads_the_stepped_window(tmp_path):
    """A 9-turn run with judge_window 4 and judge_window_step 2: the turn rubric's windows
    hold 3-4 turns, and consecutive windows start alike except when the start moves."""
    run_dir = make_run(tmp_path, turns=9)
    _judge_window_step(run_dir, 2)
    shown = _turn_windows(run_dir)
    assert [turns[0] for turns in shown] == [0, 0, 0, 0, 2, 2, 4, 4, 6]
    assert [len(turns) for turns in shown] == [1, 2, 3, 4, 3, 4, 3, 4, 3]


def test_the_embedded_model_is_told_the_schema_once_and_last():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    from loom_sim.models.base import schema_text

    shown = [{"role": "system", "content": "S"}, {"role": "user", "content": schema_text(schema)}]
    assert _with_schema(shown, schema) == shown
    plain = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    told = _with_schema(plain, schema)
    assert told[0] == plain[0] and told[1]["content"].startswith("U\n\n")
    assert schema_text(schema) in told[1]["content"]
    assert json.loads(schema_text(schema)) == schema
