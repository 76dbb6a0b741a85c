"""Scoring a run: every rollout's turns, post hoc, idempotent and resumable.

For each rollout the scorer spawns a judge (and, for the Q&A probes, the persona) as actors on
the one model-call path, and walks the turns: a turn whose scores are all there is skipped
(unless ``force``), a scored turn is written to ``transcript.json`` at once (atomically), so a
killed ``score`` continues where it stopped. A file is only rewritten when its content
changes: scoring a scored run a second time touches nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import trio

from loom_sim.actors.base import ActorFailure, Post
from loom_sim.actors.history import Generation
from loom_sim.actors.judge import JudgeActor
from loom_sim.actors.persona import PersonaActor
from loom_sim.assembler import Assembler, InjectionKind
from loom_sim.config import LoomConfig
from loom_sim.config.spec import OpenerRole
from loom_sim.errors import LoomError
from loom_sim.judging import rubrics as rubric
from loom_sim.judging.prompts import RUBRIC_VERSION
from loom_sim.messages import Heard, Judge, Judgement, Speak, Utterance, WindowTurn
from loom_sim.models.hub import PROVIDERS, ModelHub
from loom_sim.scoring import turns
from loom_sim.scoring.aggregate import summarise
from loom_sim.seeds import SeedSource, derive_seed
from loom_sim.signals.analysis import Analysis, analyze
from loom_sim.signals.embedding import load_backend
from loom_sim.store.artifacts import RolloutFiles, read_run_file, rollout_dir
from loom_sim.store.records import Score, Transcript, TurnRecord
from loom_sim.store.trace import TraceRecorder

SCORERS = (
    "persona_adherence",
    "trajectory",
    "naturalness",
    "stagnation",
    "fidelity",
    "consistency",
)
TURN_RUBRIC_SCORERS = (
    "persona_adherence",
    "trajectory",
    "naturalness",
    "stagnation",
    "consistency",
)
CONFIG_KEYS = {"trajectory": "trajectory_adherence"}  # scorer -> its switch in evaluation.scoring
QA_PROBES = 3  # turns at which the persona is asked about itself: first, middle, last
SCORE_TRACE = "score_trace.jsonl"


@dataclass(frozen=True)
class ScoreOptions:
    judge_model: str | None = None
    judge_window: int | None = None
    force: bool = False
    concurrency: int = 4


@dataclass
class ScoreSummary:
    rollouts: int = 0
    scored_turns: int = 0
    skipped_turns: int = 0
    failures: int = 0
    written: list[Path] = field(default_factory=list)


def enabled_scorers(config: LoomConfig) -> list[str]:
    switches = config.evaluation.scoring
    return [s for s in SCORERS if getattr(switches, CONFIG_KEYS.get(s, s)).enabled]


async def score_run(run_dir: Path, hub: ModelHub, options: ScoreOptions) -> ScoreSummary:
    record = read_run_file(run_dir)
    config = LoomConfig.model_validate(record["config"])
    judge = options.judge_model or record["models"]["judge"]
    hub.check(judge)
    summary = ScoreSummary()
    limiter = trio.CapacityLimiter(max(1, options.concurrency))

    async def one(index: int) -> None:
        files = RolloutFiles(rollout_dir(run_dir, index))
        transcript = files.transcript()
        if transcript is None or not transcript.turns:
            return
        async with limiter:
            scorer = RolloutScorer(config, record, files, transcript, hub, judge, options)
            await scorer.run(summary)

    async with trio.open_nursery() as nursery:
        for index in range(int(record["rollouts"])):
            nursery.start_soon(one, index)
    return summary


class RolloutScorer:
    def __init__(
        self,
        config: LoomConfig,
        run: dict,
        files: RolloutFiles,
        transcript: Transcript,
        hub: ModelHub,
        judge: str,
        options: ScoreOptions,
    ):
        self.config = config
        self.files = files
        self.transcript = transcript
        self.hub = hub
        self.judge = judge
        self.options = options
        self.window = options.judge_window or config.interaction.judge_window
        self.scorers = enabled_scorers(config)
        self.assembler = Assembler(config, int(run["turns"]))
        self.seeds = SeedSource(int(run["seed"]), transcript.index)
        self.persona_model = run["models"]["persona"]
        # An imported transcript's persona model cannot be called again: no Q&A probes then.
        self.can_probe = self.persona_model.split("/", 1)[0] in PROVIDERS
        previous = transcript.scores
        if previous is not None and previous.judge != judge and not options.force:
            raise LoomError(
                f"{files.dir}: its scores were made by {previous.judge}; rescoring with {judge} "
                "would mix judges. Add --force to rescore every turn with the new judge."
            )
        records = transcript.turns
        self.fidelity_turns = self._sample_fidelity(len(records), int(run["seed"]))
        self.probe_turns = sorted({0, len(records) // 2, len(records) - 1}) if records else []

    async def run(self, summary: ScoreSummary) -> None:
        records = list(self.transcript.turns)
        analysis = self._analysis(records)
        tracer = TraceRecorder(self.files.dir / SCORE_TRACE)
        post = Post(f"{self.transcript.rollout}/score", tracer)
        try:
            async with trio.open_nursery() as nursery:
                post.spawn(
                    nursery, JudgeActor(self.hub.client(self.judge, role="judge"), self.seeds)
                )
                for index, record in enumerate(records):
                    needed = self._needed(record)
                    if not needed:
                        summary.skipped_turns += 1
                        continue
                    scores = await self._score_turn(post, nursery, records, index, needed, analysis)
                    summary.failures += sum(1 for s in scores.values() if s.value is None)
                    records[index] = msgspec.structs.replace(
                        record, scores={**record.scores, **scores}
                    )
                    summary.scored_turns += 1
                    tracer.flush()
                    self._write(records, None, summary)
                nursery.cancel_scope.cancel()
        finally:
            tracer.close()
        rollout_scores = summarise(
            records,
            self.scorers,
            analysis,
            rubric_version=RUBRIC_VERSION,
            judge=self.judge,
            judge_window=self.window,
        )
        self._write(records, rollout_scores, summary)
        summary.rollouts += 1

    # ─── one turn ───────────────────────────────────────────────────────────

    def _needed(self, record: TurnRecord) -> list[str]:
        wanted = [s for s in self.scorers if s != "fidelity" or record.turn in self.fidelity_turns]
        if self.options.force:
            return wanted
        return [s for s in wanted if s not in record.scores]

    async def _score_turn(
        self,
        post: Post,
        nursery: trio.Nursery,
        records: list[TurnRecord],
        index: int,
        needed: list[str],
        analysis: Analysis | None,
    ) -> dict[str, Score]:
        record = records[index]
        window_records = records[max(0, index - self.window + 1) : index + 1]
        window = [WindowTurn(r.turn, r.persona, r.interlocutor) for r in window_records]
        phase = self.assembler.phases.at(record.turn, record.fired).spec
        scores: dict[str, Score] = {}
        judgement = None
        if any(s in TURN_RUBRIC_SCORERS for s in needed):
            judgement = await self._judge(
                post,
                record.turn,
                "turn",
                rubric.turn_rubric(self.config, record.turn, phase),
                window,
                rubric.turn_schema(self.config),
            )
        if "persona_adherence" in needed:
            scores["persona_adherence"] = turns.persona_adherence(judgement)
        if "trajectory" in needed:
            scores["trajectory"] = turns.trajectory(judgement, record)
        if "naturalness" in needed:
            scores["naturalness"] = turns.naturalness(judgement, window_records)
        if "stagnation" in needed and analysis is not None:
            scores["stagnation"] = turns.stagnation(judgement, analysis.turns[index])
        if "consistency" in needed:
            qa, qa_details = (None, {})
            if record.turn in self.probe_turns:
                if self.can_probe:
                    qa, qa_details = await self._qa(post, nursery, records, index)
                else:
                    qa_details = {"qa_skipped": f"{self.persona_model} cannot be asked again"}
            scores["consistency"] = turns.consistency(judgement, qa, qa_details)
        if "fidelity" in needed:
            plan = self.assembler.plan(record.turn, record.fired)
            assert plan.prompt is not None
            answer = await self._judge(
                post,
                record.turn,
                "fidelity",
                rubric.fidelity_rubric(record.turn, plan.prompt.must_do),
                window,
                rubric.FIDELITY_SCHEMA,
            )
            scores["fidelity"] = turns.fidelity(answer)
        return scores

    async def _judge(
        self,
        post: Post,
        turn: int,
        rubric_id: str,
        text: str,
        window: list[WindowTurn],
        schema: dict,
    ) -> Judgement:
        answer = await post.request(
            "judge",
            Judge(turn=turn, rubric=text, window=window, schema=schema, rubric_id=rubric_id),
            turn=turn,
        )
        assert isinstance(answer, Judgement)
        return answer

    async def _qa(
        self, post: Post, nursery: trio.Nursery, records: list[TurnRecord], index: int
    ) -> tuple[float | None, dict]:
        """Ask the persona about itself at this turn; the judge compares with the spec and the
        answers at earlier probe turns (kept in those turns' consistency details)."""
        record = records[index]
        questions = rubric.qa_questions(self.config)
        persona = self._persona_at(records, index)
        name = f"persona@{record.turn}"
        post.spawn(nursery, persona, name=name)
        answers = []
        for number, question in enumerate(questions):
            try:
                said = await post.request(
                    name,
                    Speak(
                        turn=record.turn + 1,
                        attempt=100 + number,  # its own seeds, apart from the rollout's attempts
                        emergency=rubric.qa_prompt(self.config.persona_name, question),
                    ),
                    turn=record.turn,
                )
            except ActorFailure as failure:
                if failure.failure.kind != "BadModelReply":
                    raise
                answers.append("(no answer)")
                continue
            assert isinstance(said, Utterance)
            answers.append(said.text)
        earlier = [
            WindowTurn(r.turn, a, q)
            for r in records[:index]
            if "consistency" in r.scores
            for q, a in r.scores["consistency"].details.get("qa_answers", [])
        ]
        window = earlier + [
            WindowTurn(record.turn, a, q) for q, a in zip(questions, answers, strict=True)
        ]
        judgement = await self._judge(
            post,
            record.turn,
            "qa",
            rubric.qa_rubric(self.config, record.turn, len(questions)),
            window,
            rubric.qa_schema(len(questions)),
        )
        details = {"qa_answers": [[q, a] for q, a in zip(questions, answers, strict=True)]}
        if not judgement.ok:
            details["qa_error"] = judgement.error
            return None, details
        verdicts = [v for v in judgement.parsed.get("consistent") or [] if isinstance(v, bool)]
        if not verdicts:
            details["qa_error"] = "no verdicts given"
            return None, details
        details["qa_reason"] = judgement.parsed.get("reason", "")
        return sum(verdicts) / len(verdicts), details

    def _persona_at(self, records: list[TurnRecord], index: int) -> PersonaActor:
        config = self.config
        conversation = config.conversation
        last_full = max(r.turn for r in records[: index + 1] if r.injection == InjectionKind.FULL)
        scaffolding = self.assembler.plan(last_full, records[index].fired).prompt
        assert scaffolding is not None
        opening = (
            conversation.opening_message if conversation.opener is OpenerRole.INTERLOCUTOR else None
        )
        return PersonaActor(
            self.hub.client(self.persona_model, role="persona"),
            Generation(min(conversation.persona_max_tokens, 120), conversation.temperature),
            self.seeds,
            opening=opening,
            scaffolding=scaffolding.render(),
            past=[Heard(r.turn, r.persona, r.interlocutor) for r in records[: index + 1]],
        )

    # ─── the rest ───────────────────────────────────────────────────────────

    def _analysis(self, records: list[TurnRecord]) -> Analysis | None:
        if "stagnation" not in self.scorers:
            return None
        spec = self.config.interaction.stagnation_detection
        backend = load_backend(spec.backend.value)
        return analyze([(r.persona, r.interlocutor) for r in records], backend, spec)

    def _sample_fidelity(self, count: int, run_seed: int) -> set[int]:
        rate = self.config.evaluation.scoring.fidelity.sample_rate
        rng = random.Random(derive_seed(run_seed, "fidelity", self.transcript.index))
        chosen = {turn for turn in range(count) if rng.random() < rate}
        return chosen or ({count - 1} if count else set())

    def _write(self, records: list[TurnRecord], scores, summary: ScoreSummary) -> None:
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
