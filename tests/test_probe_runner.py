"""The probe runner: categories and strategies per policy, the log, determinism, pairing,
judge failures, stopped modes, the bandit's state and its learning through the real judge."""

from __future__ import annotations

import json
import re

import pytest
import trio
from probe_support import (
    fixed_target,
    log_lines,
    make_plan,
    run_plan,
    without_timings,
)

from loom_sim.errors import LoomError
from loom_sim.models.hub import ModelHub
from loom_sim.models.retry import RetryPolicy
from loom_sim.models.scripted import ScriptedClient
from loom_sim.probe.stand_ins import StandInTarget
from loom_sim.seeds import derive_seed
from loom_sim.strategies.classifier import CATEGORIES
from loom_sim.strategies.policies import ADAPTIVE_MAPPING, STRATEGIES
from loom_sim.testing.fake_server import FakeOpenAIServer

RECORD_FIELDS = {
    "run_id",
    "mode",
    "seed",
    "target",
    "prompt_id",
    "prompt",
    "prompt_category",
    "category",
    "classifier_evidence",
    "strategy",
    "rationale",
    "success",
    "judge",
    "conversation",
    "usage",
    "timings",
    "finish_reasons",
}


@pytest.mark.parametrize("category", CATEGORIES)
async def test_each_turn1_category_is_logged_with_each_policys_strategy(tmp_path, category):
    plan = make_plan(tmp_path, runs=3)
    await run_plan(plan, target=fixed_target(category, reverse=True))
    static, adaptive, bandit = (log_lines(plan.dir, m) for m in ("static", "adaptive", "bandit"))
    for records in (static, adaptive, bandit):
        assert [r["category"] for r in records] == [category] * 3
        assert all(r["success"] is True for r in records)
    assert {r["strategy"] for r in static} == {"default"}
    assert "static baseline" in static[0]["rationale"]
    assert {r["strategy"] for r in adaptive} == {ADAPTIVE_MAPPING[category]}
    assert f"Turn 1 was {category}" in adaptive[0]["rationale"]
    assert all(r["strategy"] in STRATEGIES for r in bandit)
    assert all(f"Thompson sample for {category}" in r["rationale"] for r in bandit)


async def test_a_log_line_has_every_field(tmp_path):
    plan = make_plan(tmp_path, modes=("adaptive",), runs=2, target_system="Be brief.")
    await run_plan(plan)
    first = log_lines(plan.dir, "adaptive")[0]
    assert set(first) == RECORD_FIELDS
    assert first["run_id"] == 0 and first["mode"] == "adaptive"
    assert first["prompt_id"] == "trolley_switch" and first["prompt_category"] == "moral_dilemma"
    assert first["prompt"].startswith("A runaway trolley")
    assert first["classifier_evidence"]["rule"] and "scores" in first["classifier_evidence"]
    roles = [m["role"] for m in first["conversation"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert first["conversation"][0]["content"] == "Be brief."
    assert first["judge"]["model"] == "scripted/probe-judge" and first["judge"]["attempts"] == 1
    assert first["judge"]["evidence"] and first["judge"]["error"] is None
    assert isinstance(first["success"], bool)
    assert set(first["usage"]) == {"target", "judge"}
    assert first["usage"]["target"]["output_tokens"] > 0
    assert set(first["timings"]) == {"turn1", "turn2", "judge", "total"}
    assert first["finish_reasons"] == {"turn1": "stop", "turn2": "stop"}


async def test_same_seed_same_logs_and_the_same_run_index_is_paired_across_modes(tmp_path):
    logs = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        plan = make_plan(tmp_path / name, seed=seed, runs=12, concurrency=3)
        await run_plan(plan)
        logs[name] = {m: without_timings(log_lines(plan.dir, m)) for m in plan.modes}
    assert logs["a"] == logs["b"]
    assert logs["a"] != logs["c"]
    static, adaptive, bandit = logs["a"]["static"], logs["a"]["adaptive"], logs["a"]["bandit"]
    for s, a, b in zip(static, adaptive, bandit, strict=True):
        assert s["seed"] == a["seed"] == b["seed"]
        assert s["prompt_id"] == a["prompt_id"] == b["prompt_id"]
        assert s["conversation"][:2] == a["conversation"][:2] == b["conversation"][:2]
    assert [r["prompt_id"] for r in static[:9]] == [
        "trolley_switch",
        "footbridge",
        "transplant_surgeon",
        "heinz_medicine",
        "expense_report",
        "friend_partner_cheating",
        "self_driving_car",
        "broken_promise",
        "trolley_switch",
    ]


class SlowOnTrolleys:
    """The stand-in target, slower on the first prompt (runs 0 and 8), noting finish order."""

    spec = "scripted/slow-on-trolleys"
    context_tokens = 32_768

    def __init__(self) -> None:
        self.inner = ScriptedClient(self.spec, responses=StandInTarget())
        self.finished: list[int | None] = []

    async def complete(self, request):
        if "trolley" in request.messages[0].content:
            await trio.sleep(0.05)
        response = await self.inner.complete(request)
        self.finished.append(request.seed)
        return response

    def count_tokens(self, text):
        return len(text.split())

    async def aclose(self):
        return None


async def test_concurrent_runs_finish_out_of_order_but_are_logged_in_run_order(tmp_path):
    plan = make_plan(tmp_path, modes=("adaptive",), runs=10, concurrency=4)
    target = SlowOnTrolleys()
    await run_plan(plan, target=target)
    records = log_lines(plan.dir, "adaptive")
    assert [r["run_id"] for r in records] == list(range(10))
    turn2_seeds = [derive_seed(r["seed"], "target", 2) for r in records]
    finished = [s for s in target.finished if s in turn2_seeds]
    assert finished != turn2_seeds  # they did finish out of order


async def test_a_judge_without_a_verdict_makes_the_run_unjudged_not_failed(tmp_path):
    plan = make_plan(tmp_path, modes=("static", "bandit"), runs=3)
    garbled = ScriptedClient("scripted/garbled", responses=["no json here, sorry"])
    await run_plan(plan, judge=garbled)
    for mode in ("static", "bandit"):
        for record in log_lines(plan.dir, mode):
            assert record["success"] is None
            assert record["judge"]["error"] and record["judge"]["attempts"] == 3
            assert record["judge"]["raw"] == "no json here, sorry"
    assert not (tmp_path / "state.json").exists()  # an unjudged run teaches the bandit nothing


async def test_a_non_boolean_verdict_is_unjudged(tmp_path):
    plan = make_plan(tmp_path, modes=("static",), runs=1)
    judge = ScriptedClient(
        "scripted/yesish", responses=['{"contradiction": "yes", "evidence": "x"}']
    )
    await run_plan(plan, judge=judge)
    [record] = log_lines(plan.dir, "static")
    assert record["success"] is None and "not true/false" in record["judge"]["error"]


async def test_a_failing_target_stops_the_mode_in_one_sentence_keeping_completed_runs(tmp_path):
    plan = make_plan(tmp_path, modes=("static",), runs=8, concurrency=1)
    target = ScriptedClient(
        "scripted/flaky",
        responses=StandInTarget(),
        fail_on_calls={7},  # run 3, Turn 1
    )
    with pytest.raises(LoomError) as caught:
        await run_plan(plan, target=target)
    message = str(caught.value)
    assert message.startswith("static run 3: scripted/flaky: injected failure on call 7.")
    assert "The 3 completed static runs are in" in message and "\n" not in message
    assert [r["run_id"] for r in log_lines(plan.dir, "static")] == [0, 1, 2]
    mode = json.loads((plan.dir / "probe.json").read_text())["modes"]["static"]
    assert mode["status"] == "stopped" and mode["completed"] == 3
    assert mode["error"].startswith("static run 3")


async def test_a_dead_server_stops_the_probe_in_one_sentence(tmp_path):
    plan = make_plan(
        tmp_path, modes=("static",), runs=2, target="openai/x", base_url="http://127.0.0.1:9/v1"
    )
    hub = ModelHub(base_url="http://127.0.0.1:9/v1", retry=RetryPolicy(2, base_s=0.001))
    with pytest.raises(LoomError) as caught:
        await run_plan(plan, hub=hub)
    message = str(caught.value)
    # Both runs go at once: which of them fails first is the scheduler's choice, not ours.
    assert re.match(r"static run [01]: ", message) and "127.0.0.1:9" in message, message
    assert "The 0 completed static runs" in message and "\n" not in message
    assert (plan.dir / "static.jsonl").read_text() == ""


async def test_a_garbled_server_reply_stops_the_probe_in_one_sentence(tmp_path):
    with FakeOpenAIServer(fault_rate=1.0, faults="malformed") as server:
        plan = make_plan(
            tmp_path, modes=("adaptive",), runs=1, target="openai/x", base_url=server.base_url
        )
        hub = ModelHub(base_url=server.base_url, retry=RetryPolicy(2, base_s=0.001))
        with pytest.raises(LoomError) as caught:
            await run_plan(plan, hub=hub)
    assert str(caught.value).startswith("adaptive run 0: openai/x")
    assert "\n" not in str(caught.value)


async def test_bandit_state_is_saved_and_a_second_probe_continues_it(tmp_path):
    first = make_plan(
        tmp_path / "one", modes=("bandit",), runs=20, bandit_state=tmp_path / "s.json"
    )
    await run_plan(first)
    saved = json.loads((tmp_path / "s.json").read_text())
    learned = sum(
        n["successes"] + n["failures"] for a in saved["counts"].values() for n in a.values()
    )
    assert learned == 20
    meta = json.loads((first.dir / "probe.json").read_text())["modes"]["bandit"]["bandit_state"]
    assert meta["path"] == str(tmp_path / "s.json")
    assert meta["counts_after"] == saved["counts"]
    assert all(n == {"successes": 0, "failures": 0}
               for a in meta["counts_before"].values() for n in a.values())  # fmt: skip

    second = make_plan(
        tmp_path / "two", modes=("bandit",), runs=10, bandit_state=tmp_path / "s.json"
    )
    await run_plan(second)
    meta2 = json.loads((second.dir / "probe.json").read_text())["modes"]["bandit"]["bandit_state"]
    assert meta2["counts_before"] == saved["counts"]
    again = json.loads((tmp_path / "s.json").read_text())
    total = sum(
        n["successes"] + n["failures"] for a in again["counts"].values() for n in a.values()
    )
    assert total == 30 and meta2["counts_after"] == again["counts"]


async def test_default_bandit_state_is_per_config_and_target(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plan = make_plan(tmp_path, modes=("bandit",), runs=2, bandit_state=None)
    assert (
        str(plan.bandit_state) == "results/probe-state/moral_dilemmas--scripted-probe-target.json"
    )
    await run_plan(plan)
    assert (tmp_path / plan.bandit_state).is_file()


@pytest.mark.parametrize("seed", [11, 12])
async def test_acceptance_the_bandit_finds_the_80_percent_strategy(tmp_path, seed):
    """One strategy reverses the target 80% of the time, the others 20% (a seeded draw in the
    target), judged by the real JudgeActor on a scripted judge that reads the reversal: after
    200 bandit runs through the runner, >= 70% of the last 100 pick the better strategy."""
    best = "exploit_nuance"
    rates = {c: {s: 0.8 if s == best else 0.2 for s in STRATEGIES} for c in CATEGORIES}
    target = ScriptedClient("scripted/eighty-twenty", responses=StandInTarget(rates))
    plan = make_plan(tmp_path, modes=("bandit",), runs=200, seed=seed)
    await run_plan(plan, target=target)
    records = log_lines(plan.dir, "bandit")
    assert len(records) == 200 and all(r["success"] is not None for r in records)
    late = records[100:]
    assert sum(r["strategy"] == best for r in late) / len(late) >= 0.70
    reversed_ = [r for r in records if r["success"]]
    assert all("the target says" in r["judge"]["evidence"] for r in reversed_)
