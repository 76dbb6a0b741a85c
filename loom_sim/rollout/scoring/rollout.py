"""Scoring one rollout: its turns walked in order (or in lanes), each scored by the enabled
scorers through a :class:`~loom_sim.rollout.scoring.base.TurnView`, the finished prefix written to
``transcript.json`` as it grows.

The judge and the persona (for the Q&A probes) are actors of the registered kinds on the one
model-call path. An in-process judge gets a llama.cpp slot per rubric, so each rubric's prompt
extends its previous one; an in-process persona is asked the last probe's questions first,
while its slot still holds the rollout's last prompt.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import trio

from loom_sim.actors.base import ActorContext, Post, build
from loom_sim.assembler import Assembler, InjectionKind
from loom_sim.config.spec import OpenerRole
from loom_sim.errors import LoomError
from loom_sim.judging import rubrics
from loom_sim.judging.prompts import RUBRIC_VERSION, Rubric
from loom_sim.messages import Judge, Judgement, WindowTurn
from loom_sim.models.base import BadModelReply
from loom_sim.models.hub import ModelHub
from loom_sim.models.providers import PROVIDERS, Sharing
from loom_sim.rollout.messages import Speak
from loom_sim.rollout.scoring.aggregate import summarise
from loom_sim.rollout.scoring.base import TurnView
from loom_sim.rollout.scoring.plan import (
    QA_GRAMMAR,
    QA_MAX_TOKENS,
    SCORE_TRACE,
    Enabled,
    ScoreOptions,
    ScoreSummary,
    enabled_scorers,
    window_start,
)
from loom_sim.rollout.scoring.progress import NullScoreProgress, ScoreProgress
from loom_sim.rollout.scoring.safety import safety_activation
from loom_sim.seeds import SeedSource, derive_seed
from loom_sim.signals.analysis import Analysis, analyze
from loom_sim.signals.embedding import load_backend
from loom_sim.store.artifacts import RolloutFiles
from loom_sim.store.records import Score, Transcript, TurnRecord
from loom_sim.store.run_file import RunRecord
from loom_sim.store.trace import TraceRecorder

#: The roles whose models scoring calls (``judge/…`` slots included): the others' in-process
#: contexts can go once the rollouts are over (:func:`loom_sim.models.local.release_slots`).
SCORING_ROLES = ("persona", "judge")


class RolloutScorer:
    """Scores one rollout's turns, ``lanes`` of them at once.

    Each lane has its own judge actor (an actor serves its requests one by one). Turns
    finish in any order but reach ``transcript.json`` in turn order, as the contiguous
    prefix of finished turns: the file at any moment is what sequential scoring would have
    written, so a Ctrl-C keeps a prefix and ``score`` resumes after it. The one dependency
    between turns — a probe turn's Q&A reads the answers given at the earlier probes — is
    kept by making a probe turn wait for the earlier ones."""

    def __init__(
        self,
        run: RunRecord,
        files: RolloutFiles,
        transcript: Transcript,
        hub: ModelHub,
        judge: str,
        options: ScoreOptions,
        *,
        lanes: int = 1,
    ):
        self.lanes = max(1, lanes)
        self.config = run.loom_config
        self.files = files
        self.transcript = transcript
        self.hub = hub
        self.judge = judge
        self.options = options
        self.window = options.judge_window or self.config.interaction.judge_window
        step = self.config.interaction.judge_window_step
        self.window_step = min(step or 1, self.window)  # the last `window` turns, every turn
        # A judge run in-process keeps one evaluated prompt per llama.cpp instance (a slot):
        # each rubric gets its own, so the turn rubric's prompt is still there when the next
        # turn's extends it, whatever other rubrics were asked in between.
        provider = PROVIDERS.get(judge.split("/", 1)[0])
        self.slot_per_rubric = provider.sharing is Sharing.ROLE
        self._rubric_judges: dict[tuple[str, str], str] = {}
        self._answers: dict[tuple[int, tuple[str, ...]], list[str]] = {}
        self.planned_turns = run.turns
        self.scorers = enabled_scorers(self.config)
        self.assembler = Assembler(self.config, run.turns)
        self.seeds = SeedSource(run.seed, transcript.index)
        self.persona_model = run.models.get("persona", "")
        # An imported transcript's persona model cannot be called again: no Q&A probes then.
        self.can_ask = self.persona_model.split("/", 1)[0] in PROVIDERS
        previous = transcript.scores
        if previous is not None and previous.judge != judge and not options.force:
            raise LoomError(
                f"{files.dir}: its scores were made by {previous.judge}; rescoring with {judge} "
                "would mix judges. Add --force to rescore every turn with the new judge."
            )
        count = len(transcript.turns)
        self.samples = {
            e.info.name: self._sample(e.info.name, getattr(e.settings, "sample_rate", 1.0), count)
            for e in self.scorers
        }
        self.probe_turns = frozenset({0, count // 2, count - 1} if count else ())

    def plan(self, progress: ScoreProgress) -> None:
        """Tell ``progress`` what this rollout's scoring will do."""
        per_scorer: dict[str, int] = {}
        turns = 0
        for record in self.transcript.turns:
            needed = self._needed(record)
            turns += bool(needed)
            for enabled in needed:
                per_scorer[enabled.info.name] = per_scorer.get(enabled.info.name, 0) + 1
        progress.planned(self.transcript.rollout, turns, per_scorer)

    async def run(self, summary: ScoreSummary, progress: ScoreProgress | None = None) -> None:
        progress = progress or NullScoreProgress()
        records = list(self.transcript.turns)
        analysis = self._analysis(records)
        tracer = TraceRecorder(self.files.dir / SCORE_TRACE)
        post = Post(f"{self.transcript.rollout}/score", tracer, first_id=tracer.next_id)
        judge_client = self.hub.client(self.judge, role="judge")
        todo = [(index, self._needed(record)) for index, record in enumerate(records)]
        summary.skipped_turns += sum(1 for _, needed in todo if not needed)
        todo = [(index, needed) for index, needed in todo if needed]
        finished = {index: trio.Event() for index, _ in todo}
        outcomes: dict[int, tuple[list[str], list[str]]] = {}  # scored, failed: for progress
        written = list(records)  # what transcript.json holds: the finished prefix
        frontier = 0  # records[:frontier] are all finished (or needed nothing)

        def commit(index: int) -> None:
            """Write the turns that now complete the finished prefix, and report them."""
            nonlocal frontier
            finished[index].set()
            start = frontier
            while frontier < len(records) and (
                frontier not in finished or finished[frontier].is_set()
            ):
                written[frontier] = records[frontier]
                frontier += 1
            if frontier == start:
                return
            tracer.flush()
            self._write(written, None, summary)
            for done in range(start, frontier):
                if done in outcomes:
                    progress.turn_scored(self.transcript.rollout, *outcomes.pop(done))

        async def score(index: int, needed: list[Enabled], judge: str) -> None:
            if index in self.probe_turns:  # its Q&A reads the earlier probes' answers
                for earlier in sorted(self.probe_turns):
                    if earlier < index and earlier in finished:
                        await finished[earlier].wait()
            scores = await self._score_turn(post, nursery, records, index, needed, analysis, judge)
            failed = [name for name, s in scores.items() if s.state == "failed"]
            summary.failures += len(failed)
            summary.not_applicable += sum(1 for s in scores.values() if s.state == "not_applicable")
            record = records[index]
            records[index] = msgspec.structs.replace(record, scores={**record.scores, **scores})
            summary.scored_turns += 1
            outcomes[index] = (list(scores), failed)
            commit(index)

        async def lane(
            judge: str, queue: trio.MemoryReceiveChannel[tuple[int, list[Enabled]]]
        ) -> None:
            async for index, needed in queue:
                await score(index, needed, judge)

        try:
            async with trio.open_nursery() as nursery:
                context = ActorContext(seeds=self.seeds, model=lambda role: judge_client)
                lanes = min(self.lanes, len(todo)) or 1
                judges = ["judge"] + [f"judge.{n}" for n in range(1, lanes)]
                send, receive = trio.open_memory_channel[tuple[int, list[Enabled]]](len(todo))
                for item in todo:  # turns are taken in order, by whichever lane is free
                    send.send_nowait(item)
                send.close()
                await self._ask_last_probe_first(post, nursery, records, todo, analysis)
                async with trio.open_nursery() as lanes_nursery:
                    for name in judges:
                        post.spawn(nursery, build("judge", context), name=name)
                        lanes_nursery.start_soon(lane, name, receive.clone())
                receive.close()
                nursery.cancel_scope.cancel()
        finally:
            tracer.close()
        records = written
        rollout_scores = summarise(
            records,
            [e.info.name for e in self.scorers],
            analysis,
            rubric_version=RUBRIC_VERSION,
            judge=self.judge,
            judge_window=self.window,
            planned_turns=self.planned_turns,
            activation=safety_activation(self.config, self.planned_turns),
        )
        self._write(records, rollout_scores, summary)
        summary.rollouts += 1

    # ─── one turn ───────────────────────────────────────────────────────────

    def _needed(self, record: TurnRecord) -> list[Enabled]:
        wanted = [e for e in self.scorers if record.turn in self.samples[e.info.name]]
        if self.options.force:
            return wanted
        return [e for e in wanted if e.info.name not in record.scores]

    async def _score_turn(
        self,
        post: Post,
        nursery: trio.Nursery,
        records: list[TurnRecord],
        index: int,
        needed: list[Enabled],
        analysis: Analysis | None,
        judge: str = "judge",
    ) -> dict[str, Score]:
        view = self._view(post, nursery, records, index, analysis, judge)
        for enabled in needed:  # every part of the joint call is known before it is made
            part = enabled.scorer.joint(view)
            if part is not None:
                view.joint_parts.setdefault(part.id, part)
        # A scorer that questions the persona goes last: its judge call reads the persona's
        # answers, not the window, and the rubrics after it would read the window again.
        scores = {}
        for enabled in sorted(needed, key=lambda e: e.info.asks_persona):
            scores[enabled.info.name] = await enabled.scorer.score(view)
        return {e.info.name: scores[e.info.name] for e in needed}

    async def _ask_last_probe_first(
        self,
        post: Post,
        nursery: trio.Nursery,
        records: list[TurnRecord],
        todo: list[tuple[int, list[Enabled]]],
        analysis: Analysis | None,
    ) -> None:
        """Put the last probe turn's questions to an in-process persona before anything else.

        Right after ``loom-sim run`` the persona's llama.cpp slot still holds the rollout's
        last prompt, which the last probe's prompt extends (the same system prompt and history,
        two messages and a question more): asked now, it reads a few hundred tokens instead of
        the whole conversation. The answers are kept for the turn's scoring, which asks the
        same questions in turn order (answers are seeded: the order changes none of them)."""
        last = max(self.probe_turns, default=None)
        if not self.can_ask or last is None:  # (an imported persona cannot be asked at all)
            return
        if PROVIDERS.get(self.persona_model.split("/", 1)[0]).sharing is not Sharing.ROLE:
            return
        needed = next((needed for index, needed in todo if index == last), [])
        view = self._view(post, nursery, records, last, analysis, "judge")
        for enabled in needed:
            questions = enabled.scorer.persona_questions(view)
            if questions and view.ask_persona is not None:
                await view.ask_persona(questions)

    def _view(
        self,
        post: Post,
        nursery: trio.Nursery,
        records: list[TurnRecord],
        index: int,
        analysis: Analysis | None,
        judge: str,
    ) -> TurnView:
        record = records[index]
        window = records[window_start(index, self.window, self.window_step) : index + 1]
        phase = self.assembler.phases.at(record.turn, record.fired).spec

        async def ask_judge(
            rubric_id: str,
            rubric: Rubric,
            schema: dict[str, Any],
            over: list[WindowTurn] | None,
            /,
            *,
            slot: str | None = None,
        ) -> Judgement:
            turns = (
                over
                if over is not None
                else [WindowTurn(r.turn, r.persona, r.interlocutor) for r in window]
            )
            request = Judge(
                turn=record.turn,
                rubric=rubric.question,
                brief=rubric.brief,
                window=turns,
                schema=schema,
                rubric_id=rubric_id,
            )
            return await post.request(
                self._judge_for(post, nursery, judge, slot or rubric_id), request, turn=record.turn
            )

        async def ask_persona(questions: list[str]) -> list[str]:
            return await self._ask_persona(post, nursery, records, index, questions)

        return TurnView(
            index=index,
            records=records,
            window=window,
            config=self.config,
            assembler=self.assembler,
            phase=phase,
            signals=analysis.turns[index] if analysis is not None else None,
            probe_turns=self.probe_turns,
            persona_model=self.persona_model,
            ask_judge=ask_judge,
            ask_persona=ask_persona if self.can_ask else None,
            planned_turns=self.planned_turns,
            window_size=self.window,
        )

    def _judge_for(self, post: Post, nursery: trio.Nursery, lane: str, slot: str) -> str:
        """The judge actor that answers in ``slot`` in this lane: the lane's own, or for an
        in-process judge one per slot (a rubric, or the joint call), each with its own
        llama.cpp slot (spawned on first use)."""
        if not self.slot_per_rubric or not slot:
            return lane
        name = self._rubric_judges.get((lane, slot))
        if name is None:
            name = self._rubric_judges[lane, slot] = f"{lane}/{slot}"
            client = self.hub.client(self.judge, role=f"judge/{slot}")
            context = ActorContext(seeds=self.seeds, model=lambda role: client)
            post.spawn(nursery, build("judge", context), name=name)
        return name

    async def _ask_persona(
        self,
        post: Post,
        nursery: trio.Nursery,
        records: list[TurnRecord],
        index: int,
        questions: list[str],
    ) -> list[str]:
        """The persona, as it was at this turn, answers each question (Q&A probes); asked
        once per turn and questions, however often (the last probe's are asked first)."""
        key = (index, tuple(questions))
        if key in self._answers:
            return self._answers[key]
        record = records[index]
        conversation = self.config.conversation
        last_full = max(r.turn for r in records[: index + 1] if r.injection == InjectionKind.FULL)
        scaffolding = self.assembler.plan(last_full, record.fired).prompt
        client = self.hub.client(self.persona_model, role="persona")
        context = ActorContext(
            seeds=self.seeds,
            model=lambda role: client,
            config=self.config,
            opening=conversation.opening_message
            if conversation.opener is OpenerRole.INTERLOCUTOR
            else None,
            scaffolding=scaffolding.render() if scaffolding is not None else "",
            records=records[: index + 1],
            max_tokens=QA_MAX_TOKENS,
            grammar=QA_GRAMMAR,
        )
        name = f"persona@{record.turn}"
        post.spawn(nursery, build("persona", context), name=name)
        answers = []
        for number, question in enumerate(questions):
            speak = Speak(
                turn=record.turn + 1,
                attempt=100 + number,  # its own seeds, apart from the rollout's attempts
                emergency=rubrics.qa_prompt(self.config.persona_name, question),
            )
            try:
                said = await post.request(name, speak, turn=record.turn)
            except BadModelReply:
                answers.append("(no answer)")
                continue
            answers.append(said.text)
        self._answers[key] = answers
        return answers

    # ─── the rest ───────────────────────────────────────────────────────────

    def _analysis(self, records: list[TurnRecord]) -> Analysis | None:
        if not any(e.scorer.uses_signals for e in self.scorers):
            return None
        spec = self.config.interaction.stagnation_detection
        backend = load_backend(spec.backend.value)
        return analyze([(r.persona, r.interlocutor) for r in records], backend, spec)

    def _sample(self, name: str, rate: float, count: int) -> set[int]:
        """The turns a scorer scores: all, or a seeded sample (at least one turn)."""
        if rate >= 1.0:
            return set(range(count))
        rng = random.Random(derive_seed(self.seeds.run_seed, name, self.transcript.index))
        chosen = {turn for turn in range(count) if rng.random() < rate}
        return chosen or ({count - 1} if count else set())

    def _write(self, records: list[TurnRecord], scores: Any, summary: ScoreSummary) -> None:
        transcript = msgspec.structs.replace(
            self.transcript,
            turns=records,
            scores=scores if scores is not None else self.transcript.scores,
        )
        path = self.files.transcript_path
        new = msgspec.json.format(msgspec.json.encode(transcript), indent=2) + b"\n"
        if path.exists() and path.read_bytes() == new:
            return
        self.files.write_transcript(transcript)
        self.transcript = transcript
        if path not in summary.written:
            summary.written.append(path)
