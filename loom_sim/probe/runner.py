"""Running a probe: per mode, N independent two-turn conversations, judged and logged.

One run (:meth:`ModeRunner.run`): the target answers the Turn-1 prompt; the classifier reads
the answer; the mode's policy picks a strategy; its template becomes the Turn-2 message; the
target answers; the judge (an actor of the registered ``judge`` kind on its own
:class:`~loom_sim.actors.base.Post`, as in scoring) decides whether Turn 2 contradicted Turn 1.

Why seeds come from (probe seed, run index) and never from the mode: run *i* of the static,
adaptive and bandit modes then sends the same Turn-1 prompt with the same sampling seed, so on
a deterministic target all three see the same Turn-1 answer and differ only in the strategy.
That pairing is what lets the summary say "adaptive found this contradiction, static missed
it" about one question rather than about two different ones.

Concurrency and ownership: static and adaptive runs are independent, so ``concurrency`` worker
tasks in one nursery take run indices in turn; the bandit must see each outcome before its next
choice, so its runs go one by one, and its state file is saved after every learned outcome. The
mode owns its :class:`~loom_sim.probe.records.ProbeLog`, which writes records in run order
whatever order they finish in. A run that fails (a dead server, a key the server refuses) stops
its mode with one sentence naming the run; every completed run stays in the log, and
``probe.json`` says how far the mode got.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Protocol

import trio

from loom_sim.actors.base import ActorContext, Post, build
from loom_sim.errors import LoomError
from loom_sim.judging import contradiction
from loom_sim.messages import Judge, Judgement
from loom_sim.models.base import ChatMessage, ModelClient, ModelRequest, ModelResponse
from loom_sim.models.hub import ModelHub
from loom_sim.probe.followups import render_followup
from loom_sim.probe.plan import ProbePlan
from loom_sim.probe.records import JudgeOutcome, Message, ProbeLog, ProbeRecord, log_path
from loom_sim.seeds import SeedSource, derive_seed
from loom_sim.store.trace import TraceRecorder
from loom_sim.strategies.classifier import classify
from loom_sim.strategies.policies import BanditPolicy, Policy, StaticPolicy, make_policy

#: (spec, role) -> the client to call; by default the hub's (tests inject scripted ones).
ModelSource = Callable[[str, str], ModelClient]


class ProbeProgress(Protocol):
    def mode_started(self, mode: str, runs: int) -> None: ...

    def run_done(self, record: ProbeRecord) -> None: ...

    def mode_ended(self, mode: str, completed: int, status: str) -> None: ...


class NullProbeProgress:
    def mode_started(self, mode: str, runs: int) -> None:
        pass

    def run_done(self, record: ProbeRecord) -> None:
        pass

    def mode_ended(self, mode: str, completed: int, status: str) -> None:
        pass


class RunFailed(LoomError):
    """A run could not complete; the message names the mode and the run."""

    def __init__(self, mode: str, run_id: int, error: Exception):
        self.run_id = run_id
        super().__init__(f"{mode} run {run_id}: {error}")


def run_seed(probe_seed: int, run_id: int) -> int:
    """The seed of run ``run_id``: the same in every mode (see the module docstring)."""
    return derive_seed(probe_seed, "probe-run", run_id)


def policy_for(plan: ProbePlan, mode: str) -> Policy:
    if mode == "static":
        return StaticPolicy(plan.config.static_strategy)
    if mode == "bandit":
        return make_policy("bandit", state_path=plan.bandit_state)
    return make_policy(mode)


class ModeRunner:
    """The runs of one mode: one target client, one judge client, one policy."""

    def __init__(
        self, plan: ProbePlan, mode: str, target: ModelClient, judge: ModelClient, policy: Policy
    ):
        self.plan = plan
        self.mode = mode
        self.target = target
        self.judge = judge
        self.policy = policy

    async def run(self, run_id: int) -> ProbeRecord:
        try:
            return await self._run(run_id)
        except LoomError as err:
            raise RunFailed(self.mode, run_id, err) from None

    async def _run(self, run_id: int) -> ProbeRecord:
        config, plan = self.plan.config, self.plan
        prompt = config.prompt_for_run(run_id)
        seed = run_seed(plan.seed, run_id)
        started = time.perf_counter()
        conversation = [ChatMessage("system", plan.target_system)] if plan.target_system else []
        conversation.append(ChatMessage("user", prompt.text))
        first = await self._ask(conversation, derive_seed(seed, "target", 1))
        turn1_s = time.perf_counter() - started
        classification = classify(first.text, prompt=prompt.text)
        category = classification.category
        choice = self.policy.choose(category, random.Random(derive_seed(seed, "policy")))
        followup = render_followup(
            config.template(prompt, choice.strategy),
            prompt=prompt.text,
            prompt_id=prompt.id,
            prompt_category=prompt.category,
            answer=first.text,
            category=category,
            counterclaim=prompt.counterclaim,
        )
        conversation += [ChatMessage("assistant", first.text), ChatMessage("user", followup)]
        second = await self._ask(conversation, derive_seed(seed, "target", 2))
        conversation.append(ChatMessage("assistant", second.text))
        turn2_done = time.perf_counter()
        judgement = await self._judge(
            run_id,
            contradiction.request(
                prompt.category, (prompt.text, first.text), (followup, second.text)
            ),
        )
        verdict = contradiction.verdict(judgement)
        finished = time.perf_counter()
        return ProbeRecord(
            run_id=run_id,
            mode=self.mode,
            seed=seed,
            target=self.target.spec,
            prompt_id=prompt.id,
            prompt=prompt.text,
            prompt_category=prompt.category,
            category=category,
            classifier_evidence=classification.evidence.to_dict(),
            strategy=choice.strategy,
            rationale=choice.rationale,
            success=verdict.success,
            judge=JudgeOutcome(
                model=self.judge.spec,
                evidence=verdict.evidence,
                error=verdict.error,
                raw=judgement.raw,
                attempts=judgement.attempts,
            ),
            conversation=[Message(m.role, m.content) for m in conversation],
            usage={"target": first.usage + second.usage, "judge": judgement.usage},
            timings={
                "turn1": round(turn1_s, 4),
                "turn2": round(turn2_done - started - turn1_s, 4),
                "judge": round(finished - turn2_done, 4),
                "total": round(finished - started, 4),
            },
            finish_reasons={"turn1": first.finish_reason, "turn2": second.finish_reason},
        )

    async def _ask(self, conversation: list[ChatMessage], seed: int) -> ModelResponse:
        generation = self.plan.config.generation
        return await self.target.complete(
            ModelRequest(
                messages=list(conversation),
                max_tokens=generation.max_tokens,
                temperature=generation.temperature,
                seed=seed,
            )
        )

    async def _judge(self, run_id: int, request: Judge) -> Judgement:
        """Ask a judge actor of this run (seeded by the probe seed and run index only)."""
        settings = self.plan.config.judge
        client = self.judge
        judge = build(
            "judge",
            ActorContext(
                seeds=SeedSource(self.plan.seed, run_id),
                model=lambda role: client,
                settings={"max_attempts": settings.max_attempts, "max_tokens": settings.max_tokens},
            ),
        )
        post = Post(f"{self.mode}/run_{run_id:04d}", TraceRecorder(None))
        async with trio.open_nursery() as nursery:
            post.spawn(nursery, judge, name="judge")
            try:
                return await post.request("judge", request, turn=2, sender="probe")
            finally:
                await post.close()  # the judge's inbox ends, so does its task


async def execute(
    plan: ProbePlan,
    hub: ModelHub,
    progress: ProbeProgress | None = None,
    models: ModelSource | None = None,
) -> dict[str, int]:
    """Run every mode of the plan in turn; return the runs completed per mode. The hub is
    closed at the end, whatever happens."""
    source = models or (lambda spec, role: hub.client(spec, role=role))
    completed: dict[str, int] = {}
    try:
        for mode in plan.modes:
            completed[mode] = await run_mode(plan, mode, source, progress or NullProbeProgress())
    finally:
        with trio.CancelScope(shield=True):
            await hub.aclose()
    return completed


async def run_mode(plan: ProbePlan, mode: str, models: ModelSource, progress: ProbeProgress) -> int:
    """All runs of ``mode`` into ``<mode>.jsonl``; ``probe.json`` says how far it got."""
    options = plan.options
    policy = policy_for(plan, mode)
    runner = ModeRunner(
        plan, mode, models(options.target, "target"), models(options.judge, "judge"), policy
    )
    log = ProbeLog(log_path(plan.dir, mode))
    bandit: dict[str, Any] = {}
    if isinstance(policy, BanditPolicy):
        bandit = {"path": str(plan.bandit_state), "counts_before": _counts(policy)}
    plan.update_mode(mode, status="running", started_at=_now(), **_bandit_field(bandit))
    progress.mode_started(mode, plan.runs)
    status, failure = "stopped", None
    try:
        if isinstance(policy, BanditPolicy):
            await _learn_in_sequence(runner, policy, plan.runs, log, progress)
        else:
            await _run_concurrently(runner, plan.runs, options.concurrency, log, progress)
        status = "done"
    except RunFailed as err:
        failure = err
    except BaseExceptionGroup as group:
        failure = _first_failure(group)
    finally:
        log.close()
        if bandit:
            bandit["counts_after"] = _counts(policy)  # type: ignore[arg-type]
        plan.update_mode(
            mode,
            status=status,
            completed=log.written,
            ended_at=_now(),
            error=None if failure is None else str(failure),
            **_bandit_field(bandit),
        )
        progress.mode_ended(mode, log.written, status)
    if failure is not None:
        raise LoomError(
            f"{str(failure).rstrip('.')}. The {log.written} completed {mode} runs are in "
            f"{log.path}."
        ) from None
    return log.written


async def _learn_in_sequence(
    runner: ModeRunner, bandit: BanditPolicy, runs: int, log: ProbeLog, progress: ProbeProgress
) -> None:
    """One run at a time: the bandit learns each outcome (and saves it) before choosing again.
    An unjudged run teaches it nothing."""
    for run_id in range(runs):
        record = await runner.run(run_id)
        log.add(record)
        if record.success is not None:
            bandit.update(record.category, record.strategy, record.success)
            await trio.to_thread.run_sync(bandit.save)  # atomic; off the event loop
        progress.run_done(record)


async def _run_concurrently(
    runner: ModeRunner, runs: int, concurrency: int, log: ProbeLog, progress: ProbeProgress
) -> None:
    """``concurrency`` workers take run indices from one iterator until none are left."""
    pending: Iterator[int] = iter(range(runs))

    async def worker() -> None:
        for run_id in pending:  # next() never yields, so no index is taken twice
            record = await runner.run(run_id)
            log.add(record)
            progress.run_done(record)

    async with trio.open_nursery() as nursery:
        for _ in range(max(1, min(concurrency, runs))):
            nursery.start_soon(worker)


def _first_failure(group: BaseExceptionGroup) -> RunFailed:
    """The failed run with the lowest index, if every failure is a failed run; else re-raise."""
    matched, rest = group.split(RunFailed)
    if rest is not None or matched is None:
        raise group
    return min(_leaves(matched), key=lambda err: err.run_id)


def _leaves(group: BaseExceptionGroup) -> Iterator[RunFailed]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            assert isinstance(exc, RunFailed)
            yield exc


def _counts(policy: BanditPolicy) -> dict[str, Any]:
    return policy.to_dict()["counts"]


def _bandit_field(bandit: dict[str, Any]) -> dict[str, Any]:
    return {"bandit_state": dict(bandit)} if bandit else {}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
