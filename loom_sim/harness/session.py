"""One session: a simulated user driving a target through the harness machine.

Each active state of :data:`loom_sim.harness.machines.session.HARNESS` has one handler here
that does that state's work and returns the trigger that leaves it;
:func:`~loom_sim.machines.engine.drive` fires it. The actors — simulated user, target,
reflector, evaluator — run in this session's nursery; the session owns the turn in progress
and the record it becomes.

A session never raises into the run: a target that cannot go on, a model that fails for good,
or a crashed actor ends it in ``error`` with every completed turn on disk and the reason in its
summary; the runtime budget ends it in ``done`` even mid-turn (the turn in progress is
dropped). Resuming rebuilds it from ``turns.jsonl``: the target is started afresh (its setup
lines sent again), the actors get the completed turns back, and the next turn is the first
one not on disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from loom_sim.actors.base import ActorContext, Post, build
from loom_sim.errors import describe
from loom_sim.harness.actors.evaluator import EvaluatorSetup, Tally
from loom_sim.harness.actors.reflector import ReflectorSetup
from loom_sim.harness.actors.simulated_user import UserSetup
from loom_sim.harness.actors.target import TargetSetup
from loom_sim.harness.audit import audit, feedback, vocabulary
from loom_sim.harness.evidence import ability_evidence
from loom_sim.harness.machines.session import HARNESS, Trigger
from loom_sim.harness.messages import (
    Action,
    Collect,
    Dispatch,
    Evaluate,
    Observed,
    PlanAction,
    Reflect,
    StartTarget,
)
from loom_sim.harness.plan import SessionSpec
from loom_sim.harness.records import (
    CAST_FILE,
    TRACE_FILE,
    HarnessTurn,
    RejectedDraft,
    Reply,
    SetupExchange,
    SetupRecord,
)
from loom_sim.harness.stop import Stop, StopReason, after_turn, runtime_used, total_cost
from loom_sim.harness.targets import AdapterContext, TargetFatal
from loom_sim.harness.targets.observe import EventTail
from loom_sim.harness.turn import (
    MAX_SIGNALS,
    SessionProgress,
    SessionResult,
    TurnInProgress,
    attributed,
    leaves,
    observed,
    setup_events,
    signals_of,
)
from loom_sim.machines.engine import Handler, Machine, drive
from loom_sim.messages import WindowTurn
from loom_sim.models.base import ModelClient
from loom_sim.seeds import SeedSource
from loom_sim.store.trace import TraceRecorder, read_trace

#: (model spec, session index, role) -> the client to call: the hub's, or a test's.
ModelSource = Callable[[str, int, str], ModelClient]
SENDER = "session"  # who the session's messages come from, in the trace


class Session:
    def __init__(
        self,
        spec: SessionSpec,
        models: ModelSource,
        progress: SessionProgress,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.spec = spec
        self._models = models
        self._progress = progress
        self._clock = clock
        self._machine = Machine(HARNESS)
        self._records: list[HarnessTurn] = []
        self._setups: list[SetupRecord] = []
        self._current: TurnInProgress | None = None
        self._stop: Stop | None = None
        self._post: Post | None = None
        self._started = 0.0
        self._before = 0.0  # running time of earlier starts (a resumed session)
        self._tally = Tally()  # what earlier turns produced, for a resumed evaluator
        self._new_events: list[dict[str, Any]] = []  # since the last evaluation
        self._known: set[str] = set()
        self._offset = 0
        self._orphans: list[dict[str, Any]] = []  # a lost turn's events, passed over
        self._log = spec.bundle.turns
        self._setup_log = spec.bundle.setups

    # ─── the run ────────────────────────────────────────────────────────────

    async def run(self) -> SessionResult:
        spec, bundle = self.spec, self.spec.bundle
        error: str | None = None
        tracer: TraceRecorder | None = None
        self._started = self._clock()
        try:
            self._records = self._log.load()
            self._setups = self._setup_log.load()
            bundle.rebuild(self._setups, self._records)
            self._restore()
            trace = bundle.path(TRACE_FILE)
            first = max((e.id for e in read_trace(trace)), default=0) + 1 if trace.exists() else 1
            tracer = TraceRecorder(trace)
            self._post = Post(spec.name, tracer, first_id=first)
            self._progress.session_started(
                spec.name, spec.scenario.budget.max_turns, len(self._records)
            )
            budget = spec.scenario.budget.max_runtime_s
            deadline = trio.current_time() + (budget - self._before if budget else float("inf"))
            async with trio.open_nursery() as nursery:
                self._spawn(nursery, self._post)
                try:
                    with trio.move_on_at(deadline) as scope:
                        await drive(self._machine, self._handlers())
                    if scope.cancelled_caught and budget and not self._machine.done:
                        self._stop = Stop(StopReason.MAX_RUNTIME, runtime_used(budget))
                        self._machine.fire(Trigger.OUT_OF_TIME)
                finally:
                    nursery.cancel_scope.cancel()  # the target closes with its actor
        except Exception as exc:
            error = describe(exc)
            if any(isinstance(e, TargetFatal) for e in leaves(exc)):
                self._stop = Stop(StopReason.ADAPTER_FATAL, error)
            if not self._machine.done:
                self._machine.fire(Trigger.FAIL)
        finally:
            if tracer is not None:
                tracer.close()
            self._log.close()
            self._setup_log.close()
        status = "error" if error is not None else "done"
        why = error or (f"{self._stop.reason}: {self._stop.detail}" if self._stop else "")
        self._progress.session_ended(spec.name, status, why)
        return SessionResult(
            spec.name, status, self._stop, error, self._records, self.elapsed, self._cost()
        )

    @property
    def elapsed(self) -> float:
        return self._before + self._clock() - self._started

    def _cost(self) -> float | None:
        return total_cost(self._records)

    def _handlers(self) -> dict[str, Handler[Trigger]]:
        return {
            "init": self._init,
            "start_chat": self._start_chat,
            "import_inputs": self._import_inputs,
            "plan_turn": self._plan_turn,
            "act": self._act,
            "observe": self._observe,
            "reflect": self._reflect,
            "score_checkpoint": self._score_checkpoint,
        }

    def _restore(self) -> None:
        """What the next turn needs from the turns already on disk."""
        spec = self.spec
        if self._records:
            self._before = self._records[-1].elapsed_s
        offsets = [r.events_offset for r in self._records] + [s.events_offset for s in self._setups]
        self._offset = max(offsets, default=0)  # the event file only grows
        if (self._records or self._setups) and spec.target.events:
            # A turn killed before it was committed may have left events (an `argued` that
            # meets a criterion): no committed turn shows them, so none may count them.
            tail = EventTail(Path(spec.file(spec.target.events)), self._offset)
            self._orphans = tail.skip()
            self._offset = tail.offset
        texts = [*spec.input_names, spec.scenario.context, spec.scenario.goal]
        texts += [f"{a.name} {a.usage} {a.summary}" for a in spec.abilities]
        for setup in self._setups:
            texts += [setup.greeting.text, *(x.reply.text for x in setup.exchanges)]
            self._tally.events += setup_events(setup)
        for record in self._records:
            texts.append(record.reply.text)
            self._tally.events += record.events
            self._tally.artifacts += attributed(record.action, record.artifacts)
            self._tally.replies.append(record.reply.text)
        self._known = vocabulary(texts)

    def _spawn(self, nursery: trio.Nursery, post: Post) -> None:
        spec = self.spec
        seeds = SeedSource(spec.seed, spec.index)
        base = ActorContext(seeds=seeds, model=self._model)
        past = [observed(r) for r in self._records]
        adapter = AdapterContext(
            workdir=spec.bundle.path("target"),
            bundle=spec.bundle.dir,
            inputs=spec.inputs,
            seed=seeds.rollout_seed,
            model=lambda model_spec: self._models(model_spec, spec.index, "target"),
            history=[(r.action.text, r.reply.text) for r in self._records],
            cast=spec.bundle.path(self._cast_name()),
        )
        seen = [str(spec.bundle.dir / a.path) for r in self._records for a in r.artifacts]
        setups: dict[str, Any] = {
            "target": TargetSetup(spec.target, adapter, self._offset, seen),
            "simulated_user": UserSetup(
                spec.persona,
                spec.scenario,
                spec.policy,
                spec.input_names,
                spec.abilities,
                past,
                inputs_loaded=bool(spec.target.setup),
            ),
            "reflector": ReflectorSetup(spec.persona, spec.scenario, spec.policy),
            "evaluator": EvaluatorSetup(spec.scenario, self._met_before(), self._tally),
        }
        for kind, setup in setups.items():
            context = ActorContext(seeds=seeds, model=base.model, settings=setup)
            post.spawn(nursery, build(kind, context), name=kind)

    def _cast_name(self) -> str:
        starts = len(self._setups)
        return CAST_FILE if starts == 0 else CAST_FILE.replace(".cast", f".{starts + 1}.cast")

    def _met_before(self) -> list[str]:
        return [
            r.id for t in self._records for r in t.evaluation.results if r.judged and r.met is True
        ]

    def _model(self, role: str) -> ModelClient:
        return self._models(self.spec.models[role], self.spec.index, role)

    @property
    def _turn(self) -> TurnInProgress:
        if self._current is None:
            raise RuntimeError("no turn in progress")
        return self._current

    @property
    def _active(self) -> Post:
        if self._post is None:
            raise RuntimeError("the session's post is not open")
        return self._post

    # ─── states ─────────────────────────────────────────────────────────────

    async def _init(self) -> Trigger:
        if self._records:
            self._stop = after_turn(self.spec.scenario, self._records, self.elapsed)
        return Trigger.FINISH if self._stop else Trigger.START

    async def _start_chat(self) -> Trigger:
        greeting = await self._active.request("target", StartTarget(), turn=-1, sender=SENDER)
        start = len(self._setups)
        self._setups.append(
            SetupRecord(
                start=start,
                after_turn=len(self._records),
                greeting=Reply.of(greeting),
                events=greeting.events,
                events_offset=greeting.events_offset,
                orphaned_events=self._orphans,
            )
        )
        return Trigger.CHAT_LIVE

    async def _import_inputs(self) -> Trigger:
        setup = self._setups[-1]
        post, fill = self._active, self.spec.fill
        lines = [fill(line) for line in self.spec.target.setup]
        for line in lines:
            await post.request("target", Dispatch(turn=-1, text=line), turn=-1, sender=SENDER)
            reply = await post.request("target", Collect(turn=-1), turn=-1, sender=SENDER)
            setup.exchanges.append(SetupExchange(line, Reply.of(reply), reply.events))
            setup.events_offset = reply.events_offset
        self._setup_log.append(setup)
        self.spec.bundle.add_setup(setup)
        post.tracer.flush()
        texts = [setup.greeting.text, *(x.reply.text for x in setup.exchanges)]
        self._known |= vocabulary(texts)
        self._new_events += setup_events(setup)
        shown = "; ".join(lines) if lines else "(the program started)"
        said = "\n".join(t for t in texts if t.strip())
        observed = Observed(-1, Action("command", shown), said)
        await post.tell("simulated_user", observed, turn=-1, sender=SENDER)
        return Trigger.INPUTS_READY

    async def _plan_turn(self) -> Trigger:
        if self._current is None or self._current.reflected is not None:
            self._current = TurnInProgress(turn=len(self._records))
        current = self._turn
        started = time.monotonic()
        planned = await self._active.request(
            "simulated_user",
            PlanAction(turn=current.turn, attempt=current.attempt, feedback=current.feedback),
            turn=current.turn,
            sender=SENDER,
        )
        current.timings["user_s"] = current.timings.get("user_s", 0.0) + time.monotonic() - started
        current.charge("user", planned.usage)
        if planned.gave_up:
            self._stop = Stop(StopReason.USER_GAVE_UP, planned.reason)
            return Trigger.GAVE_UP
        previous = self._records[-1] if self._records else None
        last_reply = previous.reply.text if previous else ""
        flags = audit(
            planned.action, previous.action if previous else None, self._known, last_reply
        )
        if flags and current.attempt < self.spec.policy.audit_retries:
            current.rejected.append(RejectedDraft(planned.action.text, flags))
            current.attempt += 1
            current.feedback = feedback(flags)
            return Trigger.REPLAN
        current.planned, current.audit = planned, flags
        return Trigger.ACTION_CHOSEN

    async def _act(self) -> Trigger:
        current = self._turn
        dispatch = Dispatch(turn=current.turn, text=current.action.text)
        await self._active.request("target", dispatch, turn=current.turn, sender=SENDER)
        return Trigger.DISPATCHED

    async def _observe(self) -> Trigger:
        current = self._turn
        started = time.monotonic()
        reply = await self._active.request(
            "target", Collect(turn=current.turn), turn=current.turn, sender=SENDER
        )
        current.timings["target_s"] = time.monotonic() - started
        current.reply, current.signals = reply, signals_of(reply)
        current.evidence = ability_evidence(current.action, reply, self.spec.abilities)
        if current.action.kind == "command" and not reply.failed and current.evidence is None:
            note = f"no sign that the program ran /{current.action.name}"
            current.signals = [*current.signals[:1], note, *current.signals[1:]][:MAX_SIGNALS]
        current.charge("target", reply.usage)
        self._known |= vocabulary([reply.text])
        return Trigger.WINDOW_CLOSED

    async def _reflect(self) -> Trigger:
        current = self._turn
        assert current.reply is not None
        started = time.monotonic()
        reflected = await self._active.request(
            "reflector",
            Reflect(
                turn=current.turn,
                action=current.action,
                reply=current.reply.text,
                signals=current.signals,
                failed=current.reply.failed,
            ),
            turn=current.turn,
            sender=SENDER,
        )
        current.timings["reflector_s"] = time.monotonic() - started
        current.reflected = reflected
        current.charge("reflector", reflected.usage)
        return Trigger.REFLECTED

    async def _score_checkpoint(self) -> Trigger:
        current, post, spec = self._turn, self._active, self.spec
        reply = current.reply
        assert reply is not None
        window = [WindowTurn(r.turn, r.action.text, r.reply.text) for r in self._records]
        window.append(WindowTurn(current.turn, current.action.text, reply.text))
        started = time.monotonic()
        evaluation = await post.request(
            "evaluator",
            Evaluate(
                turn=current.turn,
                window=window[-spec.policy.history_turns :],
                events=[*self._new_events, *reply.events],
                artifacts=attributed(current.action, reply.artifacts),
                reply=reply.text,
            ),
            turn=current.turn,
            sender=SENDER,
        )
        current.timings["evaluator_s"] = time.monotonic() - started
        self._new_events = []
        current.charge("evaluator", evaluation.usage)
        record = current.record(evaluation, post.next_id, self.elapsed)
        self._log.append(record)
        post.tracer.flush()
        spec.bundle.add_turn(record)
        self._records.append(record)
        await post.tell("simulated_user", observed(record), turn=current.turn, sender=SENDER)
        self._progress.turn_done(spec.name, record)
        self._stop = after_turn(spec.scenario, self._records, self.elapsed)
        return Trigger.FINISH if self._stop else Trigger.NEXT_TURN
