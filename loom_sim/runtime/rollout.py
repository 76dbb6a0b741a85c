"""One rollout: the rollout machine driven through a conversation by its actors.

Each state of ``loom_sim.machines.rollout`` has one coroutine here that does that state's work
and fires the trigger that leaves it; :meth:`Rollout.run` is the loop that dispatches on the
state. The actors (persona, interlocutor, monitor, judge) run in this rollout's nursery and
own their state; the rollout owns the turn in progress and the record it becomes.

A rollout never raises into the run: whatever goes wrong ends it in ``error`` with every
completed turn on disk and the reason in its transcript, and the other rollouts go on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from loom_sim.actors.base import ActorFailure, Post
from loom_sim.adversaries.config import AdversaryConfig, AdversaryKind
from loom_sim.assembler import Assembler, InjectionKind
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.config.spec import LoomConfig, OpenerRole, TrajectoryMode, TriggerEnd
from loom_sim.judging.rubrics import TRIGGER_SCHEMA, trigger_rubric
from loom_sim.machines.rollout import attach
from loom_sim.messages import (
    CheckCandidate,
    Heard,
    Judge,
    Judgement,
    Observation,
    Observe,
    Probe,
    Respond,
    Speak,
    Utterance,
    Verdict,
    WindowTurn,
)
from loom_sim.models.base import Usage
from loom_sim.runtime.budget import RunBudget
from loom_sim.runtime.progress import ProgressSink
from loom_sim.runtime.registry import ADVERSARY_ACTORS, ActorContext, ActorRegistry
from loom_sim.runtime.turn import TurnInProgress, add_usage, with_action
from loom_sim.store.artifacts import RolloutFiles
from loom_sim.store.records import RejectedDraft, Transcript, TurnRecord
from loom_sim.store.trace import TraceRecorder

TRIGGER_WINDOW = 3  # turns the judge sees when deciding a phase's trigger condition


@dataclass(frozen=True)
class RolloutSpec:
    index: int
    config: LoomConfig
    config_name: str
    turns: int
    seed: int
    models: dict[str, str]  # role -> model spec
    interlocutor_system: str
    files: RolloutFiles
    adversaries: dict[str, AdversaryConfig] = field(default_factory=dict)  # kind -> config

    @property
    def id(self) -> str:
        return f"rollout_{self.index:03d}"

    @property
    def responders(self) -> list[str]:
        """Who answers the persona, turn by turn in rotation: the interlocutor, or the
        adversaries (the trap first when there are two)."""
        kinds = [k for k in AdversaryKind if k.value in self.adversaries]
        return [ADVERSARY_ACTORS[k] for k in kinds] or ["interlocutor"]


class Rollout:
    def __init__(
        self,
        spec: RolloutSpec,
        registry: ActorRegistry,
        budget: RunBudget,
        progress: ProgressSink,
        clock: Callable[[], float] = time.time,
    ):
        self.spec = spec
        self._registry = registry
        self._budget = budget
        self._progress = progress
        self._clock = clock
        self._config = spec.config
        self._assembler = Assembler(spec.config, spec.turns)
        self._log = spec.files.turns
        self._records: list[TurnRecord] = []
        self._fired: dict[str, int] = {}
        self._pending_emergency: str | None = None
        self._consecutive_failures = 0
        self._current: TurnInProgress | None = None
        self._stop: tuple[str, str] | None = None
        self._usage: dict[str, Usage] = {}
        self._started = 0.0
        self.state = "init"
        attach(self)

    # ─── guards the machine asks ────────────────────────────────────────────

    def rejected(self) -> bool:
        verdict = self._turn.verdict
        return verdict is not None and not verdict.accepted

    def retries_left(self) -> bool:
        return self._turn.attempt < self._config.interaction.repetition_detection.max_retries

    # ─── the loop ───────────────────────────────────────────────────────────

    async def run(self) -> Transcript:
        """Run to ``done`` or ``error``; never raises an ordinary exception."""
        self._started = self._clock()
        spec = self.spec
        error: str | None = None
        tracer: TraceRecorder | None = None
        try:
            # No file is opened or created before the first turn: with hundreds of rollouts
            # starting together, that work would delay every first model call.
            self._records = self._log.load()
            self._restore()
            tracer = TraceRecorder(spec.files.trace)
            first_id = self._records[-1].next_envelope_id if self._records else 1
            post = Post(spec.id, tracer, first_id=first_id)
            self._progress.rollout_started(spec.id, spec.turns, len(self._records))
            async with trio.open_nursery() as nursery:
                self._spawn(nursery, post)
                try:
                    await self._drive(post)
                finally:
                    nursery.cancel_scope.cancel()  # the actors' work ends with the rollout's
        except Exception as exc:  # an actor, a model call or the disk failed for good
            error = _describe(exc)
            if self.state != "error":
                self.fail()  # type: ignore[attr-defined]
        finally:
            if tracer is not None:
                tracer.close()
            self._log.close()
        transcript = self._transcript(error)
        spec.files.write_transcript(transcript)
        self._progress.rollout_ended(spec.id, transcript.status, transcript.stop_detail or error)
        return transcript

    async def _drive(self, post: Post) -> None:
        steps = {
            "init": self._init,
            "plan": self._plan,
            "act": self._act,
            "observe": self._observe,
            "monitor": self._monitor,
            "score": self._score,
        }
        while self.state not in ("done", "error"):
            await steps[self.state](post)

    # ─── states ─────────────────────────────────────────────────────────────

    async def _init(self, post: Post) -> None:
        if len(self._records) >= self.spec.turns:
            self._stop = ("max_turns", f"{len(self._records)} of {self.spec.turns} turns")
            self.finish()  # type: ignore[attr-defined]
            return
        self.start()  # type: ignore[attr-defined]

    async def _plan(self, post: Post) -> None:
        turn = len(self._records)
        plan = self._assembler.plan(
            turn, self._fired, prompt="injected", emergency=self._pending_emergency
        )
        self._current = TurnInProgress(plan=plan, started_at=self._clock())
        self.prompt_ready()  # type: ignore[attr-defined]

    async def _act(self, post: Post) -> None:
        current = self._turn
        plan = current.plan
        full = plan.injection == InjectionKind.FULL
        candidate = await self._utterance(
            post,
            "persona",
            Speak(
                turn=plan.turn,
                attempt=current.attempt,
                injection=plan.injection,
                scaffolding=plan.prompt.render() if full and plan.prompt else None,
                reminder=plan.reminder,
                emergency=plan.emergency,
                vary=current.vary,
            ),
        )
        if candidate is None:
            return
        verdict = await post.request(
            "monitor",
            CheckCandidate(turn=plan.turn, attempt=current.attempt, text=candidate.text),
            turn=plan.turn,
        )
        assert isinstance(verdict, Verdict)
        current.candidate, current.verdict = candidate, verdict
        self.candidate()  # type: ignore[attr-defined]  # the guard picks: act again, or observe
        if verdict.accepted:
            return
        if self.state == "act":
            current.rejected.append(RejectedDraft(current.attempt, candidate.text, verdict.events))
            current.events += [with_action(e, "reprompt") for e in verdict.events]
            current.attempt += 1
            current.vary = verdict.vary
        else:
            current.events += [with_action(e, "accepted_after_retries") for e in verdict.events]

    async def _observe(self, post: Post) -> None:
        current = self._turn
        assert current.candidate is not None
        turn = current.plan.turn
        responders = self.spec.responders
        responder = responders[turn % len(responders)]
        reply = await self._utterance(
            post, responder, Respond(turn=turn, text=current.candidate.text)
        )
        if reply is None:
            return
        current.reply = reply
        if isinstance(reply, Probe):
            current.move, current.judged = reply.move, reply.judged
            self._charge("judge", reply.judge_usage)
        heard = Heard(turn=turn, persona=current.candidate.text, interlocutor=reply.text)
        for listener in ["persona", *(r for r in responders if r != "interlocutor")]:
            await post.tell(listener, heard, turn=turn)
        self.exchanged()  # type: ignore[attr-defined]

    async def _monitor(self, post: Post) -> None:
        current = self._turn
        assert current.candidate is not None and current.reply is not None
        observation = await post.request(
            "monitor",
            Observe(
                turn=current.plan.turn,
                persona=current.candidate.text,
                interlocutor=current.reply.text,
                phase_index=current.plan.phase_index,
                intensities=current.plan.intensities,
            ),
            turn=current.plan.turn,
        )
        assert isinstance(observation, Observation)
        current.events += observation.events
        self._pending_emergency = observation.emergency
        self.observed()  # type: ignore[attr-defined]

    async def _score(self, post: Post) -> None:
        current = self._turn
        if current.failed is not None:
            self._consecutive_failures += 1
            limit = self._config.conversation.max_consecutive_failures
            if self._consecutive_failures >= limit:
                self._stop = (
                    "consecutive_failures",
                    f"{self._consecutive_failures} failed turns in a row (last: {current.failed})",
                )
                self.finish()  # type: ignore[attr-defined]
            else:
                self.next_turn()  # type: ignore[attr-defined]  # the same turn, again
            return
        await self._check_trigger(post, current)
        record = current.record(
            self._fired,
            self._pending_emergency,
            self._consecutive_failures,
            self._clock(),
            post.next_id,
        )
        for role, usage in current.usage.items():
            add_usage(self._usage, role, usage)
        self._log.append(record)
        post.tracer.flush()
        self._records.append(record)
        self._consecutive_failures = 0
        self._progress.turn_done(
            self.spec.id,
            record.turn,
            record.phase,
            self._tokens(),
            self._cost(),
            self._clock() - self._started,
        )
        self._stop = self._stop_reason()
        if self._stop:
            self.finish()  # type: ignore[attr-defined]
        else:
            self.next_turn()  # type: ignore[attr-defined]

    # ─── helpers ────────────────────────────────────────────────────────────

    @property
    def _turn(self) -> TurnInProgress:
        assert self._current is not None
        return self._current

    async def _utterance(self, post: Post, role: str, body: Speak | Respond) -> Utterance | None:
        """A model-backed actor's answer, timed and charged; None when the reply was unusable
        (empty, malformed), which fails this attempt at the turn instead of the rollout."""
        current = self._turn
        started = time.monotonic()
        try:
            reply = await post.request(role, body, turn=current.plan.turn)
        except ActorFailure as failure:
            if failure.failure.kind != "BadModelReply":
                raise
            current.failed = failure.failure.error
            self.turn_failed()  # type: ignore[attr-defined]
            return None
        assert isinstance(reply, Utterance)
        charged = "adversary" if isinstance(reply, Probe) else role
        key = f"{charged}_s"
        current.timings[key] = current.timings.get(key, 0.0) + time.monotonic() - started
        self._charge(charged, reply.usage)
        return reply

    def _charge(self, role: str, usage: Usage) -> None:
        self._turn.charge(role, usage)
        self._budget.charge(usage)

    def _spawn(self, nursery: trio.Nursery, post: Post) -> None:
        spec = self.spec
        conversation = self._config.conversation
        opening = (
            conversation.opening_message if conversation.opener is OpenerRole.INTERLOCUTOR else None
        )
        last_full = max(
            (r.turn for r in self._records if r.injection == InjectionKind.FULL), default=None
        )
        scaffolding = (
            self._assembler.plan(last_full, self._fired).prompt.render()
            if last_full is not None
            else ""
        )
        context = ActorContext(
            config=self._config,
            rollout_index=spec.index,
            seed=spec.seed,
            models=spec.models,
            interlocutor_system=spec.interlocutor_system,
            opening=opening,
            scaffolding=scaffolding,
            records=list(self._records),
            turns=spec.turns,
            adversaries=spec.adversaries,
        )
        for role in ("persona", "monitor", "judge"):
            post.spawn(nursery, self._registry.create(role, context))
        for name in spec.responders:
            own = dataclasses.replace(context, judge=_judge_line(post, name))
            post.spawn(nursery, self._registry.create(name, own), name=name)

    def _restore(self) -> None:
        """Continue where the records end: triggers fired, the pending emergency, usage."""
        if not self._records:
            return
        last = self._records[-1]
        self._fired = dict(last.fired)
        self._pending_emergency = last.pending_emergency
        for record in self._records:
            for role, usage in record.usage.items():
                add_usage(self._usage, role, usage)
                self._budget.charge(usage)

    async def _check_trigger(self, post: Post, current: TurnInProgress) -> None:
        window_phase = self._assembler.phases.at(current.plan.turn, self._fired)
        end = window_phase.spec.end_condition
        if not isinstance(end, TriggerEnd) or window_phase.name in self._fired:
            return
        assert current.candidate is not None and current.reply is not None
        window = [
            WindowTurn(r.turn, r.persona, r.interlocutor)
            for r in self._records[-(TRIGGER_WINDOW - 1) :]
        ]
        window.append(WindowTurn(current.plan.turn, current.candidate.text, current.reply.text))
        judgement = await post.request(
            "judge",
            Judge(
                turn=current.plan.turn,
                rubric=trigger_rubric(end.when),
                window=window,
                schema=TRIGGER_SCHEMA,
                rubric_id="trigger",
            ),
            turn=current.plan.turn,
        )
        assert isinstance(judgement, Judgement)
        self._charge("judge", judgement.usage)
        if judgement.ok and judgement.parsed.get("met") is True:
            self._fired[window_phase.name] = current.plan.turn

    def _stop_reason(self) -> tuple[str, str] | None:
        done = len(self._records)
        if done >= self.spec.turns:
            return ("max_turns", f"{done} of {self.spec.turns} turns")
        trajectory = self._config.trajectory
        last = trajectory.phases[-1]
        if trajectory.mode is not TrajectoryMode.FIXED_LENGTH and last.end_condition is not None:
            windows = self._assembler.phases.windows(self._fired)
            final = windows[-1]
            if (
                final.index == len(trajectory.phases) - 1
                and final.end is not None
                and done >= final.end
            ):
                return ("phase_gated_end", f"the last phase {last.name!r} ended at turn {done - 1}")
        return self._budget.exceeded()

    def _tokens(self) -> int:
        return sum(u.input_tokens + u.output_tokens for u in self._usage.values())

    def _cost(self) -> float | None:
        total: float | None = 0.0
        for usage in self._usage.values():
            total = None if total is None or usage.cost_usd is None else total + usage.cost_usd
        return total

    def _transcript(self, error: str | None) -> Transcript:
        spec = self.spec
        conversation = self._config.conversation
        ended = self._clock()
        stop = self._stop if error is None else None
        return Transcript(
            rollout=spec.id,
            index=spec.index,
            seed=spec.seed,
            status="error" if error is not None else "done",
            stop_reason=stop[0] if stop else None,
            stop_detail=stop[1] if stop else None,
            error=error,
            persona=self._config.persona_name,
            config=spec.config_name,
            models=spec.models,
            template_version=TEMPLATE_VERSION,
            opener=conversation.opener.value,
            opening=conversation.opening_message
            if conversation.opener is OpenerRole.INTERLOCUTOR
            else None,
            turns=self._records,
            usage=self._usage,
            cost_usd=self._cost(),
            started_at=self._started,
            ended_at=ended,
            duration_s=ended - self._started,
        )


def _judge_line(post: Post, sender: str) -> Callable[[Judge], Awaitable[Judgement]]:
    """How an adversary asks the rollout's judge (its requests are traced like any other)."""

    async def ask(body: Judge) -> Judgement:
        reply = await post.request("judge", body, turn=body.turn, sender=sender)
        assert isinstance(reply, Judgement)
        return reply

    return ask


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, ActorFailure) else f"{type(exc).__name__}: {text}"
