"""The run's embedding service: batching across rollouts, the cache, verdicts that do not
depend on batching, nothing embedded twice, and cancellation that leaves nothing running."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import trio
import trio.testing
import yaml
from loom_sim.actors import embedder
from loom_sim.actors.embedder import EmbeddingFailed

from loom_sim.config import LoomConfig, load_config
from loom_sim.messages import Embed, Prefetch
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.cells import execute
from loom_sim.rollout.runtime.progress import NullProgress
from loom_sim.rollout.runtime.rollout import Rollout
from loom_sim.rollout.runtime.run import RunOptions, make_hub, plan_run, write_plan
from loom_sim.signals.embedding import EmbeddingBackend, TfidfBackend, load_backend
from tests.fakes import turn_of
from tests.harness import fakes, models_of, spec_for

ROOT = Path(__file__).parent.parent
MANIA = ROOT / "configs" / "examples" / "mania_patient.yaml"
SCRIPTED = ROOT / "configs" / "scripted"
LOOP = yaml.safe_load((SCRIPTED / "marcus_loop.yaml").read_text())["responses"]
VARIED = yaml.safe_load((SCRIPTED / "marcus_varied.yaml").read_text())["responses"]
ASSISTANT = yaml.safe_load((SCRIPTED / "assistant.yaml").read_text())["responses"]


class Spy:
    """A fresh embedding backend (its own cache) on the process's model, recording every call
    to the model: which texts went in together, and how many calls are running."""

    def __init__(self, delay_s: float = 0.0, fail: bool = False, one_by_one: bool = False):
        self.one_by_one = one_by_one  # every text through the model on its own
        self.calls: list[list[str]] = []
        self.active = 0
        self.delay_s = delay_s
        self.fail = fail
        self.on_call = None
        model = load_backend("embedding")
        assert isinstance(model, EmbeddingBackend), "these tests need the embedding model"
        self._encode = model._encode
        self.backend = EmbeddingBackend(self.encode, "spy")

    def encode(self, texts: list[str]) -> np.ndarray:
        self.active += 1
        try:
            self.calls.append(list(texts))
            if self.on_call is not None:
                self.on_call()
            time.sleep(self.delay_s)
            if self.fail:
                raise RuntimeError("the model broke")
            if self.one_by_one:
                return np.stack([self._encode([t])[0] for t in texts])
            return self._encode(texts)
        finally:
            self.active -= 1

    def load(self, name: str) -> EmbeddingBackend:
        return self.backend

    @property
    def computed(self) -> Counter[str]:
        return Counter(t for call in self.calls for t in call)


def marcus(**stagnation) -> LoomConfig:
    data = load_config(MANIA).model_dump(mode="json")
    data["interaction"]["stagnation_detection"].update(stagnation)
    data["interaction"]["repetition_detection"]["enabled"] = False  # isolate this monitor
    return LoomConfig.model_validate(data)


def scripted(lines: list[str], tag: str = ""):
    return lambda request: tag + lines[turn_of(request) % len(lines)]


def stagnation_events(transcript):
    return [
        (t.turn, e)
        for t in transcript.turns
        for e in t.monitor_events
        if e.monitor in ("stagnation", "convergence")
    ]


# ─── the service ────────────────────────────────────────────────────────────


async def test_requests_from_several_tasks_go_in_one_model_call_and_the_cache_answers_repeats():
    spy = Spy()
    asked = [[f"rollout {k} says {w}" for w in ("hello", "again")] for k in range(6)]
    got = {}
    async with embedder.running(load=spy.load, window_s=0.05) as service:

        async def ask(k: int) -> None:
            got[k] = await service.request(Embed(texts=asked[k]))

        async with trio.open_nursery() as nursery:
            for k in range(6):
                nursery.start_soon(ask, k)
        assert len(spy.calls) == 1 and sorted(spy.calls[0]) == sorted(t for a in asked for t in a)
        again = await service.request(Embed(texts=asked[2] + asked[2]))
    assert len(spy.calls) == 1  # all from the cache
    assert service.stats.cached >= 2 and service.stats.requests == 7
    for k in range(6):
        assert got[k].backend == "embedding" and got[k].vectors.shape == (2, 384)
    assert np.array_equal(again.vectors[:2], got[2].vectors)
    assert np.array_equal(again.vectors[2:], got[2].vectors)


async def test_a_request_the_cache_holds_whole_is_answered_in_the_askers_task():
    spy = Spy()
    async with embedder.running(load=spy.load, window_s=0.05) as service:
        first = await service.request(Embed(texts=["held one", "held two"]))
        with trio.testing.assert_no_checkpoints():  # no trip through the service's queue
            again = await service.request(Embed(texts=["held two", "held one", "held two"]))
        partly = await service.request(Embed(texts=["held one", "new three"]))
        service.tell(Prefetch(texts=["held two", "new three"]))  # all held: not even sent
        await trio.testing.wait_all_tasks_blocked()
        assert service.stats.prefetched == 0
        service.tell(Prefetch(texts=["held two", "new four"]))
        await trio.testing.wait_all_tasks_blocked()
        assert service.stats.prefetched == 1
    assert spy.calls[:2] == [["held one", "held two"], ["new three"]]
    assert np.array_equal(again.vectors[0], first.vectors[1])
    assert np.array_equal(again.vectors[1], first.vectors[0])
    assert np.array_equal(again.vectors[2], first.vectors[1])
    assert not again.vectors.flags.writeable  # shared vectors: read-only, as the service's
    assert np.array_equal(partly.vectors[0], first.vectors[0])
    assert service.stats.requests == 3 and service.stats.cached == 2 + 1


async def test_a_batch_is_capped_and_waiting_requests_go_before_prefetches():
    spy = Spy()
    async with embedder.running(load=spy.load, window_s=0.05, max_batch=4) as service:
        for k in range(3):
            service.tell(Prefetch(texts=[f"later {k}a", f"later {k}b"]))
        now = await service.request(Embed(texts=["now one", "now two"]))
        await trio.sleep(0.2)  # the prefetches, in their own calls
    assert now.vectors.shape == (2, 384)
    assert spy.calls[0][:2] == ["now one", "now two"]
    assert all(len(call) <= 4 for call in spy.calls)
    assert set(spy.computed) == {"now one", "now two"} | {
        f"later {k}{s}" for k in range(3) for s in "ab"
    }


async def test_a_text_is_the_same_vector_alone_or_in_any_batch():
    texts = [*LOOP[:8], *ASSISTANT[:8]]
    model = Spy()
    alone = np.stack([model._encode([t])[0] for t in texts])
    together = model._encode(texts)
    assert np.array_equal(alone, together)


async def test_a_failed_batch_fails_its_requests_and_the_service_goes_on():
    spy = Spy(fail=True)
    async with embedder.running(load=spy.load) as service:
        with pytest.raises(EmbeddingFailed, match="the model broke"):
            await service.request(Embed(texts=["doomed"]))
        spy.fail = False
        fine = await service.request(Embed(texts=["fine"]))
    assert fine.vectors.shape == (1, 384)


async def test_without_the_model_every_request_is_told_the_fallback():
    async with embedder.running(load=lambda name: TfidfBackend()) as service:
        reply = await service.request(Embed(texts=["anything"]))
    assert reply.backend == "tfidf" and reply.vectors is None


async def test_requests_made_while_the_model_loads_wait_and_go_in_one_call():
    spy = Spy()
    released = threading.Event()

    def slow_load(name: str) -> EmbeddingBackend:
        released.wait(5)
        return spy.backend

    async with embedder.running(load=slow_load) as service:
        results = []

        async def ask(k: int) -> None:
            results.append(await service.request(Embed(texts=[f"early {k}"])))

        async with trio.open_nursery() as nursery:
            for k in range(5):
                nursery.start_soon(ask, k)
            await trio.sleep(0.1)
            assert not results  # waiting for the model
            released.set()
    assert len(results) == 5 and len(spy.calls) == 1 and len(spy.calls[0]) == 5


# ─── in rollouts ────────────────────────────────────────────────────────────


async def test_verdicts_are_the_same_batched_with_other_rollouts_as_alone(tmp_path):
    """A looping rollout alone (every text its own model call) and the same rollout sharing
    the service with two others whose texts join its batches: the same triggers, the same
    values to the last digit."""
    config = marcus(min_turn=6, cooldown=2)

    async def rollout(where: Path, index: int, lines: list[str], tag: str, service):
        models = fakes(persona=scripted(lines, tag), interlocutor=scripted(ASSISTANT, tag))
        spec = spec_for(where, config, 20, index=index)
        return await Rollout(
            spec, models_of(models), RunBudget(), NullProgress(), embedder=service
        ).run()

    alone_spy = Spy(one_by_one=True)
    async with embedder.running(load=alone_spy.load, window_s=0, max_batch=1) as service:
        alone = await rollout(tmp_path / "alone", 0, LOOP, "", service)

    shared_spy = Spy()
    results = {}
    async with embedder.running(load=shared_spy.load, window_s=0.02) as service:
        async with trio.open_nursery() as nursery:
            for index, (lines, tag) in enumerate(
                [(LOOP, ""), (VARIED, "[b] "), (VARIED[::-1], "[c] ")]
            ):

                async def one(index=index, lines=lines, tag=tag) -> None:
                    results[index] = await rollout(tmp_path / "shared", index, lines, tag, service)

                nursery.start_soon(one)
    mixed = [
        c
        for c in shared_spy.calls
        if {t[:4] for t in c} & {"[b] ", "[c] "}
        and any(not t.startswith(("[b] ", "[c] ")) for t in c)
    ]
    assert mixed, "no model call held texts of the looping rollout and of the others"
    events = stagnation_events(alone)
    assert events, "the loop was not caught"
    assert [(t, e.monitor, e.values) for t, e in stagnation_events(results[0])] == [
        (t, e.monitor, e.values) for t, e in events
    ]
    assert [t.persona for t in results[0].turns] == [t.persona for t in alone.turns]


async def test_nothing_is_embedded_twice_and_the_accepted_candidate_keeps_its_vector(tmp_path):
    config = marcus(min_turn=10, cooldown=4)
    spy = Spy()
    told: list[str] = []
    asked: list[str] = []
    async with embedder.running(load=spy.load) as service:
        real_tell, real_request = service.tell, service.request

        def tell(body):
            told.extend(body.texts)
            real_tell(body)

        async def request(body):
            asked.extend(body.texts)
            return await real_request(body)

        service.tell, service.request = tell, request
        models = fakes(persona=scripted(LOOP), interlocutor=scripted(ASSISTANT))
        transcript = await Rollout(
            spec_for(tmp_path, config, 24),
            models_of(models),
            RunBudget(),
            NullProgress(),
            embedder=service,
        ).run()
    assert transcript.status == "done" and stagnation_events(transcript)
    assert max(spy.computed.values()) == 1  # every text through the model once
    fired = [t for t, _ in stagnation_events(transcript)]
    for turn in transcript.turns:
        cooling = any(0 <= turn.turn - f <= 4 for f in fired)  # nothing fires: no check made
        if turn.turn >= 10 and not cooling:  # checked as a candidate and accepted: its vector
            assert turn.persona not in told, f"turn {turn.turn}'s message was embedded again"
            # asked for by the candidate check; the checks by meaning (a capitulation clause,
            # a revelation sentence) may ask for the same text again: the cache answers them
            assert asked.count(turn.persona) >= 1
    # before min_turn no verdict waited: the window's texts came as prefetches, or (the
    # persona's) with the request its check made for the checks by meaning
    assert {t.interlocutor for t in transcript.turns[:9]} <= set(told)
    assert {t.persona for t in transcript.turns[:9]} <= set(told) | set(asked)


def _config_file(tmp_path: Path, **stagnation) -> Path:
    data = yaml.safe_load(MANIA.read_text())
    data["interaction"]["stagnation_detection"].update(stagnation)
    path = tmp_path / "mania.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _plan(tmp_path: Path, rollouts: int, **stagnation):
    plan = plan_run(
        _config_file(tmp_path, **stagnation),
        RunOptions(
            turns=14,
            rollouts=rollouts,
            seed=3,
            persona_model="scripted/varied",
            target="scripted/varied",
            judge_model="scripted/judge",
            output=tmp_path / "run",
            concurrency=rollouts,
        ),
    )
    write_plan(plan)
    return plan


async def test_a_run_shares_one_service_and_batches_its_rollouts_texts(tmp_path, monkeypatch):
    spy = Spy()
    monkeypatch.setattr(embedder, "load_backend", spy.load)
    plan = _plan(tmp_path, 4, min_turn=4)
    transcripts = await execute(plan, make_hub(plan), NullProgress())
    assert [t.status for t in transcripts] == ["done"] * 4
    sizes = [len(c) for c in spy.calls]
    assert max(sizes) > 2, sizes  # one rollout's turn has two texts: these came from several
    assert max(spy.computed.values()) == 1


class Tasks(trio.abc.Instrument):
    def __init__(self) -> None:
        self.alive: set[trio.lowlevel.Task] = set()

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.alive.add(task)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.alive.discard(task)


async def test_cancelling_a_run_mid_batch_leaves_no_task_or_model_call_running(
    tmp_path, monkeypatch
):
    spy = Spy(delay_s=0.3)
    monkeypatch.setattr(embedder, "load_backend", spy.load)
    plan = _plan(tmp_path, 3, min_turn=2)
    tasks = Tasks()
    trio.lowlevel.add_instrument(tasks)
    try:
        before = set(tasks.alive) | {trio.lowlevel.current_task()}
        with trio.move_on_after(1.0) as scope:
            await execute(plan, make_hub(plan), NullProgress())
        assert scope.cancelled_caught and spy.calls, "the run was not cancelled mid-way"
        assert spy.active == 0  # the model call in progress finished before the run returned
        assert not (tasks.alive - before), [t.name for t in tasks.alive - before]
    finally:
        trio.lowlevel.remove_instrument(tasks)


def test_ctrl_c_during_a_model_call_stops_the_run_with_nothing_left_running(tmp_path, monkeypatch):
    spy = Spy(delay_s=0.2)
    spy.on_call = lambda: signal.raise_signal(signal.SIGINT)  # Ctrl-C while the model runs
    monkeypatch.setattr(embedder, "load_backend", spy.load)
    plan = _plan(tmp_path, 2, min_turn=2)
    hub = make_hub(plan)
    with pytest.raises((KeyboardInterrupt, BaseExceptionGroup)) as raised:
        trio.run(execute, plan, hub, NullProgress())
    if isinstance(raised.value, BaseExceptionGroup):
        assert raised.value.subgroup(KeyboardInterrupt) is not None
    assert spy.calls and spy.active == 0  # the call in progress ended before trio.run did


async def test_a_failed_rollout_leaves_the_others_and_the_service_running(tmp_path):
    config = marcus(min_turn=4, cooldown=2)
    spy = Spy()
    results = {}
    async with embedder.running(load=spy.load) as service:

        async def one(index: int, fail_at: int | None) -> None:
            models = fakes(persona=scripted(LOOP, f"[{index}] "), interlocutor=scripted(ASSISTANT))
            if fail_at is not None:
                models["interlocutor"].fail_on = {fail_at: "exhausted"}
            results[index] = await Rollout(
                spec_for(tmp_path, config, 12, index=index),
                models_of(models),
                RunBudget(),
                NullProgress(),
                embedder=service,
            ).run()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, 0, 6)
            nursery.start_soon(one, 1, None)
        after = await service.request(Embed(texts=["still serving"]))
    assert results[0].status == "error" and len(results[0].turns) == 5
    assert results[1].status == "done" and len(results[1].turns) == 12
    assert after.vectors.shape == (1, 384) and spy.active == 0


async def test_a_check_and_the_observation_after_it_wait_on_one_request(tmp_path):
    """Each request waits out the service's batching window and a model call, so the monitor
    asks once per check for everything the check and the observation after it compare: the
    window and the candidate, the candidate's clauses (capitulation by meaning) and sentences
    (revelations). The observation asks again only when a sentence comes near a variant (the
    shared words, then the rest): at most two more."""
    config = marcus(min_turn=10, cooldown=4)
    spy = Spy()
    asked: list[list[str]] = []
    async with embedder.running(load=spy.load) as service:
        real_request = service.request

        async def request(body):
            asked.append(list(body.texts))
            return await real_request(body)

        service.request = request
        models = fakes(persona=scripted(VARIED), interlocutor=scripted(ASSISTANT))
        transcript = await Rollout(
            spec_for(tmp_path, config, 16),
            models_of(models),
            RunBudget(),
            NullProgress(),
            embedder=service,
        ).run()
    assert transcript.status == "done"
    checks = sum(t.persona_attempts for t in transcript.turns)
    words = [texts for texts in asked if all(" " not in t for t in texts)]  # near a variant
    assert len(asked) - 2 * len(words) <= checks
    assert len(words) < len(transcript.turns) // 2
