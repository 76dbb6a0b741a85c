"""One rollout: the rollout machine driven through a conversation by its actors.

Each active state of :data:`loom_sim.rollout.machines.rollout.ROLLOUT` has one handler here that
does
that state's work and returns the trigger that leaves it; :func:`~loom_sim.machines.engine.drive`
fires it. The actors (persona, a responder or several, monitor, judge) run in this rollout's
nursery and own their state; the rollout owns the turn in progress and the record it becomes.
Resuming (:mod:`~loom_sim.rollout.runtime.resume`), stopping
(:mod:`~loom_sim.rollout.runtime.stop_rules`) and
accounting (:mod:`~loom_sim.rollout.runtime.ledger`) are units of their own.

A rollout never raises into the run: whatever goes wrong ends it in ``error`` with every
completed turn on disk and the reason in its transcript, and the other rollouts go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import trio

from loom_sim.actors import embedder
from loom_sim.actors.base import ActorContext, Post, build
from loom_sim.actors.embedder import Embedder, needs_embeddings
from loom_sim.assembler import Assembler, InjectionKind, PromptBlocks
from loom_sim.assembler.rendering import TEMPLATE_VERSION
from loom_sim.assembler.update import update_text
from loom_sim.config.interaction import LaterFull
from loom_sim.config.spec import LoomConfig, OpenerRole, TriggerEnd
from loom_sim.errors import LoomError, describe
from loom_sim.judging.rubrics import TRIGGER_SCHEMA, trigger_rubric
from loom_sim.machines.engine import Handler, Machine, drive
from loom_sim.messages import Heard, Judge, Utterance, WindowTurn
from loom_sim.models.base import BadModelReply, ModelClient
from loom_sim.plugins.actors import ACTORS
from loom_sim.rollout.machines.rollout import ROLLOUT, Trigger
from loom_sim.rollout.messages import CheckCandidate, Observe, Probe, Respond, Speak
from loom_sim.rollout.runtime.budget import RunBudget
from loom_sim.rollout.runtime.ledger import Ledger
from loom_sim.rollout.runtime.progress import ProgressSink
from loom_sim.rollout.runtime.resume import resume
from loom_sim.rollout.runtime.session_files import SessionFiles
from loom_sim.rollout.runtime.stop_rules import Stop, StopRules
from loom_sim.rollout.runtime.turn import TurnInProgress, with_action
from loom_sim.seeds import SeedSource
from loom_sim.store.artifacts import RolloutFiles
from loom_sim.store.records import InForce, RejectedDraft, Transcript, TurnRecord
from loom_sim.store.scaffolding import scaffolding_hash
from loom_sim.store.turn_parts import LOOP_AFTER_REDIRECT, MonitorEvent

TRIGGER_WINDOW = 3  # turns the judge sees when deciding a phase's trigger condition

#: (model spec, rollout index, role) -> the client to call: the hub's, or a test's fakes.
ModelSource = Callable[[str, int, str], ModelClient]


@dataclass(frozen=True)
class Cast:
    """Which registered actor kind plays each part; the responders answer the persona turn by
    turn in rotation (the interlocutor, or the adversaries, or any registered responder)."""

    persona: str = "persona"
    monitor: str = "monitor"
    judge: str = "judge"
    responders: tuple[str, ...] = ("interlocutor",)


@dataclass(frozen=True)
class RolloutSpec:
    index: int
    config: LoomConfig
    config_name: str
    turns: int
    seed: int
    models: dict[str, str]  # model role -> spec
    interlocutor_system: str
    files: RolloutFiles
    cast: Cast = Cast()
    settings: dict[str, Any] = field(default_factory=dict)  # responder kind -> its settings

    @property
    def id(self) -> str:
        return f"rollout_{self.index:03d}"


class Rollout:
    def __init__(
        self,
        spec: RolloutSpec,
        models: ModelSource,
        budget: RunBudget,
        progress: ProgressSink,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
    ):
        self.spec = spec
        self._embedder = embedder  # the run's embedding service; None: start one if needed
        self._models = models
        self._progress = progress
        self._clock = clock
        self._config = spec.config
        self._assembler = Assembler(spec.config, spec.turns)
        self._rules = StopRules(spec.config, spec.turns, self._assembler, budget)
        self._ledger = Ledger(budget)
        self._machine = Machine(ROLLOUT)
        self._records: list[TurnRecord] = []
        self._fired: dict[str, int] = {}
        self._pending_emergency: str | None = None
        self._in_force: InForce | None = None  # the prompt in force, by reference
        self._held: PromptBlocks | None = None  # and its blocks: a new one is told as a change
        self._as_updates = spec.config.interaction.injection.later_full is LaterFull.UPDATE
        self._offered: frozenset[str] = frozenset()  # revelations that prompt offers
        self._revealed: set[str] = set()  # revelations the persona has made
        self._failures_in_a_row = 0
        self._current: TurnInProgress | None = None
        self._stop: Stop | None = None
        self._started = 0.0
        self._post: Post | None = None
        self._files: SessionFiles | None = None

    # ─── the run ────────────────────────────────────────────────────────────

    async def run(self) -> Transcript:
        """Run to ``done`` or ``error``; never raises an ordinary exception."""
        self._started = self._clock()
        spec = self.spec
        error: str | None = None
        files = self._files = SessionFiles(spec.files)
        try:
            self._records = files.load()
            resumed = resume(self._records, self._assembler)
            self._fired, self._pending_emergency = resumed.fired, resumed.pending_emergency
            self._in_force, self._offered = resumed.in_force, resumed.offered
            self._held = resumed.blocks
            self._revealed = set(resumed.revealed)
            self._ledger.restore(self._records)
            # Past both the last completed turn's ids and any an interrupted session traced
            # for its turn in progress: ids never repeat within a trace.
            first_id = max(resumed.next_envelope_id, files.trace.next_id)
            self._post = Post(spec.id, files.trace, first_id=first_id)
            self._progress.rollout_started(spec.id, spec.turns, len(self._records))
            async with self._embedding() as embedder, trio.open_nursery() as nursery:
                nursery.start_soon(files.open)  # while the first turn's calls are out
                self._spawn(nursery, self._post, resumed.scaffolding, embedder)
                try:
                    await drive(self._machine, self._handlers())
                finally:
                    nursery.cancel_scope.cancel()  # the actors' work ends with the rollout's
        except Exception as exc:  # an actor, a model call or the disk failed for good
            error = describe(exc)
            if not self._machine.done:
                self._machine.fire(Trigger.FAIL)
        finally:
            closed = files.close()
        error = error or closed
        transcript = self._transcript(error)
        try:
            await files.write_transcript(transcript)
        except LoomError as err:  # a full or read-only disk: turns.jsonl holds what was done
            error = f"{error}; {err}" if error else str(err)
            transcript = self._transcript(error)
        self._progress.rollout_ended(spec.id, transcript.status, transcript.stop_detail or error)
        return transcript

    def _handlers(self) -> dict[str, Handler[Trigger]]:
        return {
            "init": self._init,
            "plan": self._plan,
            "act": self._act,
            "observe": self._observe,
            "monitor": self._monitor,
            "score": self._score,
        }

    def _embedding(self) -> AbstractAsyncContextManager[Embedder | None]:
        """The run's embedding service; a rollout run on its own starts its own when its
        monitor compares embeddings."""
        if self._embedder is not None or not needs_embeddings(self._config):
            return nullcontext(self._embedder)
        return embedder.running()

    def _spawn(
        self, nursery: trio.Nursery, post: Post, scaffolding: str, embedder: Embedder | None
    ) -> None:
        spec, cast = self.spec, self.spec.cast
        conversation = self._config.conversation
        opening = (
            conversation.opening_message if conversation.opener is OpenerRole.INTERLOCUTOR else None
        )
        context = ActorContext(
            seeds=SeedSource(spec.seed, spec.index),
            model=self._model,
            config=self._config,
            interlocutor_system=spec.interlocutor_system,
            opening=opening,
            scaffolding=scaffolding,
            records=list(self._records),
            turns=spec.turns,
            embedder=embedder,
        )
        post.spawn(nursery, build(cast.persona, context), name="persona")
        # the monitor may ask the judge to confirm a revelation it found
        watching = replace(context, judge=post.asker("monitor"))
        post.spawn(nursery, build(cast.monitor, watching), name="monitor")
        post.spawn(nursery, build(cast.judge, context), name="judge")
        for name in cast.responders:
            own = replace(context, settings=spec.settings.get(name), judge=post.asker(name))
            post.spawn(nursery, build(name, own), name=name)

    def _model(self, role: str) -> ModelClient:
        spec = self.spec.models.get(role)
        if spec is None:
            raise KeyError(f"this run names no model for the {role} role")
        return self._models(spec, self.spec.index, role)

    # ─── states ─────────────────────────────────────────────────────────────

    async def _init(self) -> Trigger:
        self._stop = self._rules.before_start(len(self._records))
        return Trigger.FINISH if self._stop else Trigger.START

    async def _plan(self) -> Trigger:
        turn = len(self._records)
        plan = self._assembler.plan(
            turn,
            self._fired,
            prompt="injected",
            emergency=self._pending_emergency,
            revealed=self._revealed,
            # the prompt in force offers a revelation since made: send it again without it
            refresh=bool(self._offered & self._revealed),
        )
        current = TurnInProgress(
            plan=plan, started_at=self._clock(), in_force=self._in_force, offered=self._offered
        )
        if plan.injection == InjectionKind.FULL and plan.prompt is not None:
            current.in_force = InForce(scaffolding_hash(plan.prompt.render()), turn, plan.prompt)
            current.offered = frozenset(r.topic for r in plan.revelations)
        self._current = current
        return Trigger.PROMPT_READY

    async def _act(self) -> Trigger:
        current, post = self._turn, self._active_post
        plan = current.plan
        injected = current.in_force.blocks if current.in_force is not None else None
        speak = Speak(
            turn=plan.turn,
            attempt=current.attempt,
            injection=plan.injection,
            scaffolding=injected.render() if injected is not None else None,
            update=update_text(self._held, injected) if self._as_updates else None,
            reminder=plan.reminder,
            emergency=plan.emergency,
            vary=current.vary,
        )
        candidate = await self._utterance("persona", "persona", speak)
        if candidate is None:
            return Trigger.TURN_FAILED
        verdict = await post.request(
            "monitor",
            CheckCandidate(
                turn=plan.turn,
                attempt=current.attempt,
                text=candidate.text,
                phase_index=plan.phase_index,
                intensities=plan.intensities,
            ),
            turn=plan.turn,
        )
        current.candidate, current.verdict = candidate, verdict
        if verdict.accepted:
            return Trigger.ACCEPTED
        # a stagnation redirect stays with every later attempt at this turn, until a stronger
        # one (the escalation of a message that still loops after it) takes its place
        current.redirect = verdict.redirect or current.redirect
        current.offered_by_redirect += verdict.offered
        retries = self._config.interaction.repetition_detection.max_retries
        if current.attempt < retries:
            current.rejected.append(RejectedDraft(current.attempt, candidate.text, verdict.events))
            current.events += [_acted(e, "reprompt") for e in verdict.events]
            current.attempt += 1
            current.vary = "\n\n".join(n for n in (current.redirect, verdict.vary) if n)
            return Trigger.REPROMPT
        current.events += [_acted(e, "accepted_after_retries") for e in verdict.events]
        current.sent_despite_redirect = any(
            e.pattern == LOOP_AFTER_REDIRECT for e in verdict.events
        )
        return Trigger.ACCEPTED

    async def _observe(self) -> Trigger:
        current, post = self._turn, self._active_post
        candidate = current.committed
        turn = current.plan.turn
        responders = self.spec.cast.responders
        responder = responders[turn % len(responders)]
        kind = ACTORS.get(responder).responder
        role = kind.model_role if kind is not None else responder
        reply = await self._utterance(role, responder, Respond(turn=turn, text=candidate.text))
        if reply is None:
            return Trigger.TURN_FAILED
        current.reply = reply
        if isinstance(reply, Probe):  # an adversary's reply carries its move and a verdict
            current.move, current.judged = reply.move, reply.judged
            self._charge("judge", reply.judge_usage)
        heard = Heard(turn=turn, persona=candidate.text, interlocutor=reply.text)
        await post.tell("persona", heard, turn=turn)
        for name in dict.fromkeys(responders):
            listener = ACTORS.get(name).responder
            if listener is not None and listener.hears:
                await post.tell(name, heard, turn=turn)
        return Trigger.EXCHANGED

    async def _monitor(self) -> Trigger:
        current = self._turn
        plan = current.plan
        observation = await self._active_post.request(
            "monitor",
            Observe(
                turn=plan.turn,
                persona=current.committed.text,
                interlocutor=current.answer.text,
                phase_index=plan.phase_index,
                intensities=plan.intensities,
            ),
            turn=plan.turn,
        )
        current.events += observation.events
        current.revealed = observation.revealed
        if self._config.interaction.revelation_judge:  # the judge confirmed what was revealed
            self._charge("judge", observation.judge_usage)
        # A redirect that found no retry left to ride on (max_retries: 0) goes with the next
        # turn's prompt instead, as would any intervention a monitor schedules after the reply.
        redirect = current.redirect
        deferred = redirect if redirect and redirect not in (current.vary or "") else None
        self._pending_emergency = observation.emergency or deferred
        return Trigger.OBSERVED

    async def _score(self) -> Trigger:
        current = self._turn
        if current.failed is not None:
            self._failures_in_a_row += 1
            self._stop = self._rules.after_failure(self._failures_in_a_row, current.failed)
            return Trigger.FINISH if self._stop else Trigger.NEXT_TURN  # the same turn, again
        await self._check_trigger(current)
        post = self._active_post
        record = current.record(
            self._fired,
            self._pending_emergency,
            self._failures_in_a_row,
            self._clock(),
            post.next_id,
            [e for e in current.revealed if e.topic not in self._revealed],
        )
        await self._session_files.append(record)
        self._records.append(record)
        if current.in_force is not None:  # later turns refer to it, without the blocks
            self._in_force = InForce(current.in_force.hash, current.in_force.since)
            self._held = current.in_force.blocks or self._held
        self._offered = current.offered
        self._revealed.update(record.revealed)
        self._ledger.book(record.usage)
        self._failures_in_a_row = 0
        self._progress.turn_done(
            self.spec.id,
            record.turn,
            record.phase,
            self._ledger.tokens,
            self._ledger.cost,
            self._clock() - self._started,
        )
        self._stop = self._rules.after_turn(len(self._records), self._fired)
        return Trigger.FINISH if self._stop else Trigger.NEXT_TURN

    # ─── helpers ────────────────────────────────────────────────────────────

    @property
    def _turn(self) -> TurnInProgress:
        if self._current is None:
            raise RuntimeError("no turn in progress")  # the machine plans before anything else
        return self._current

    @property
    def _session_files(self) -> SessionFiles:
        if self._files is None:
            raise RuntimeError("the rollout's files are opened by run()")
        return self._files

    @property
    def _active_post(self) -> Post:
        if self._post is None:
            raise RuntimeError("the rollout's post is not open")
        return self._post

    async def _utterance(self, role: str, address: str, body: Speak | Respond) -> Utterance | None:
        """A model-backed actor's answer, timed and charged to the model ``role``; None when
        the reply was unusable (empty, malformed), which fails this attempt at the turn instead
        of the rollout."""
        current = self._turn
        started = time.monotonic()
        try:
            reply = await self._active_post.request(address, body, turn=current.plan.turn)
        except BadModelReply as err:
            current.failed = str(err)
            return None
        key = f"{role}_s"
        current.timings[key] = current.timings.get(key, 0.0) + time.monotonic() - started
        self._charge(role, reply.usage)
        return reply

    def _charge(self, role: str, usage: Any) -> None:
        self._turn.charge(role, usage)
        self._ledger.spend(usage)

    async def _check_trigger(self, current: TurnInProgress) -> None:
        window_phase = self._assembler.phases.at(current.plan.turn, self._fired)
        end = window_phase.spec.end_condition
        if not isinstance(end, TriggerEnd) or window_phase.name in self._fired:
            return
        window = [
            WindowTurn(r.turn, r.persona, r.interlocutor)
            for r in self._records[-(TRIGGER_WINDOW - 1) :]
        ]
        window.append(WindowTurn(current.plan.turn, current.committed.text, current.answer.text))
        judgement = await self._active_post.request(
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
        self._charge("judge", judgement.usage)
        if judgement.ok and judgement.parsed.get("met") is True:
            self._fired[window_phase.name] = current.plan.turn

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
            stop_reason=stop.reason.value if stop else None,
            stop_detail=stop.detail if stop else None,
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
            usage=self._ledger.by_role,
            cost_usd=self._ledger.cost,
            started_at=self._started,
            ended_at=ended,
            duration_s=ended - self._started,
        )


def _acted(event: MonitorEvent, action: str) -> MonitorEvent:
    """A guard's rejection with what was done about it; a stagnation redirect keeps its own
    action (``emergency_injection``): its re-prompt carries the emergency redirect."""
    return with_action(event, action) if event.action == "rejected" else event
