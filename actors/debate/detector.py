"""The detector: finds disagreements in the main chat, and reads the crux rooms.

Protocol: ``Posted`` (tell) -> a main-chat message, whose cheap signals (stance opposition
against every other persona's latest claim in the window ending with it:
:mod:`loom_sim.debate.opposition`) are computed in order before the next round;
``Detect`` -> ``Detection``: the round's window, each pair's strongest signal with the
learned pair check's reading (MiniLM runs: :mod:`loom_sim.debate.learned`), and — only if some
pair reached the gate or the learned check read it as opposed — what the detector model
found, each finding corroborated or not by those readings; ``CheckExit`` ->
``ExitVerdict``: has a room surfaced its crux?;
``ExtractCard`` -> ``CardAnswer``: the room's crux card, every citation validated (by the
clause reading, or with MiniLM by the learned citation check too), asked again with the
reasons when it fails; with MiniLM, the learned crux-type check's reading of the room beside
the type the card gives.

Every model call is a structured call (:func:`loom_sim.judging.structured.ask_json`) over a
fenced transcript, at the role's low temperature, seeded by (debate seed, round or room).
The similarity model (MiniLM, or TF-IDF) is loaded on first use in a worker thread, so the
event loop never waits on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import trio
from loom_sim.actors.base import Actor, ActorContext, ProtocolError

from loom_sim.debate import learned, prompts
from loom_sim.debate.cards import card_schema, uncertain_citations, validate_card
from loom_sim.debate.detection import (
    EXIT_SCHEMA,
    corroborate,
    detection_schema,
    read_detections,
    read_exit,
    without_last,
)
from loom_sim.debate.messages import (
    CardAnswer,
    CheckExit,
    Detect,
    Detection,
    ExitVerdict,
    ExtractCard,
    Line,
    PairSignal,
    Posted,
)
from loom_sim.debate.opposition import Claim, Similarity, signals_for, strongest
from loom_sim.debate.prompts import Said
from loom_sim.debate.roles import RoleModel
from loom_sim.debate.settings import DebateSettings
from loom_sim.judging.structured import Answer, Validator, ask_json
from loom_sim.messages import Body
from loom_sim.models.base import ChatMessage, ModelClient
from loom_sim.plugins.actors import actor
from loom_sim.seeds import SeedSource
from loom_sim.signals.embedding import Backend, load_backend


@dataclass(frozen=True)
class DetectorSetup:
    topic: str
    names: dict[str, str]  # persona id -> name
    settings: DebateSettings
    roles: dict[str, RoleModel]
    past: list[Line] = field(default_factory=list)  # the main chat's said lines, resumed


@actor("detector", summary="finds disagreements, checks crux rooms, writes crux cards", order=62)
class DetectorActor(Actor):
    role = "detector"

    def __init__(
        self,
        setup: DetectorSetup,
        model: Callable[[str], ModelClient],
        seeds: SeedSource,
        backend: Backend | None = None,
    ):
        self._setup = setup
        self._detection = setup.settings.detection
        self._model = model
        self._seeds = seeds
        self._similarity: Similarity | None = Similarity(backend) if backend else None
        self._lines: list[Line] = []
        self._pending: list[Line] = list(setup.past)  # posted, signals not computed yet
        self._signals: dict[str, list[PairSignal]] = {}

    @classmethod
    def from_context(cls, context: ActorContext) -> DetectorActor:
        if not isinstance(context.settings, DetectorSetup):
            raise ProtocolError("the detector actor needs a DetectorSetup as its settings")
        return cls(context.settings, context.model, context.seeds)

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Posted():
                if body.line.room is None:
                    self._pending.append(body.line)  # cannot fail: a tell has nobody to tell
                return None
            case Detect():
                await self._absorb()
                return await self._detect(body)
            case CheckExit():
                return await self._check_exit(body)
            case ExtractCard():
                return await self._extract(body)
        raise TypeError(f"detector cannot handle {type(body).__name__}")

    # ─── signals ────────────────────────────────────────────────────────────

    async def _absorb(self) -> None:
        """The signals of every message posted since the last round, each computed over the
        window that ended with it — as if on arrival, but where a failure reaches the debate
        (a tell's handler has nobody to report to). A resumed debate's earlier messages are
        only remembered: no round reads them again."""
        window = self._detection.window
        pending, self._pending = self._pending, []
        first_read = len(self._lines) + len(pending) - window
        for index, line in enumerate(pending, start=len(self._lines)):
            self._lines.append(line)
            if index >= first_read:
                await self._signal(line)

    async def _ready(self) -> Similarity:
        """The similarity model, loaded on first use in a worker thread."""
        if self._similarity is None:
            backend = await trio.to_thread.run_sync(load_backend, self._detection.similarity)
            self._similarity = Similarity(backend)
        return self._similarity

    async def _signal(self, line: Line) -> None:
        similarity = await self._ready()
        window = [
            Claim(x.id, x.speaker, x.text, x.reply_to)
            for x in self._lines[-self._detection.window :]
        ]
        matrix = await trio.to_thread.run_sync(similarity.matrix, window)
        self._signals[line.id] = signals_for(window[-1], window, matrix)

    # ─── detection rounds ───────────────────────────────────────────────────

    async def _detect(self, request: Detect) -> Detection:
        window = self._lines[-self._detection.window :]
        ids = {line.id for line in window}
        in_window = [
            s
            for line in window
            for s in self._signals.get(line.id, [])
            if all(m in ids for m in s.messages)
        ]
        best = await self._read_pairs(window, strongest(in_window))
        signals = sorted(best.values(), key=lambda s: s.pair)
        gate = max((s.opposition for s in signals), default=0.0)
        read = [line.id for line in window]
        if gate < self._detection.gate and not any(s.counts for s in signals):
            return Detection(window=read, signals=signals, gate=gate, asked=False)
        spoke = {line.speaker for line in window}
        people = [(pid, name) for pid, name in self._setup.names.items() if pid in spoke]
        nonce = self._nonce("detect", request.round)
        answer = await self._ask(
            "detection",
            "read group chats and find substantive disagreements",
            prompts.detection_prompt(self._setup.topic, people, self._shown(window), nonce),
            nonce,
            detection_schema(sorted(spoke)),
            partial(read_detections, speakers=self._setup.names, spoke=spoke),
            key=("detect", request.round),
            attempts=self._detection.attempts,
            complete_part=without_last,
        )
        found = corroborate(answer.value or [], best, self._detection.corroborate)
        return Detection(
            window=read,
            signals=signals,
            gate=gate,
            asked=True,
            found=found,
            attempts=answer.attempts,
            reading=answer.reading,
            error=answer.error,
            usage=answer.usage,
        )

    async def _read_pairs(
        self, window: list[Line], best: dict[tuple[str, str], PairSignal]
    ) -> dict[tuple[str, str], PairSignal]:
        """Each pair's signal with the learned pair check's reading of the window beside it.
        Only with MiniLM: its features are embeddings; TF-IDF runs keep the word signal alone.
        The check runs in a worker thread (it embeds the window's clauses)."""
        backend = (await self._ready()).backend
        claims = [Claim(x.id, x.speaker, x.text, x.reply_to) for x in window]
        return await trio.to_thread.run_sync(learned.with_readings, backend, claims, best)

    # ─── crux rooms ─────────────────────────────────────────────────────────

    async def _check_exit(self, request: CheckExit) -> ExitVerdict:
        nonce = self._nonce(f"exit:{request.room}", request.after)
        pair = " and ".join(self._setup.names.get(p, p) for p in request.pair)
        answer = await self._ask(
            "exit_check",
            "judge whether a debate has surfaced its crux",
            prompts.exit_prompt(pair, request.question, self._shown(request.lines), nonce),
            nonce,
            EXIT_SCHEMA,
            read_exit,
            key=(f"exit:{request.room}", request.after),
            attempts=2,
        )
        if not answer.ok or answer.value is None:
            return ExitVerdict(ok=False, error=answer.error, usage=answer.usage)
        surfaced, how, reason = answer.value
        return ExitVerdict(ok=True, surfaced=surfaced, how=how, reason=reason, usage=answer.usage)

    async def _extract(self, request: ExtractCard) -> CardAnswer:
        lines = [*request.context, *request.lines]
        authors = {line.id: line.speaker for line in lines}
        pair = (request.pair[0], request.pair[1])
        people = [(p, self._setup.names.get(p, p)) for p in request.pair]
        nonce = self._nonce(f"card:{request.room}", 0)
        texts = {line.id: line.text for line in lines}
        backend = (await self._ready()).backend
        supports = None
        if backend.name == "embedding":  # the learned citation check reads embeddings
            embed = learned.texts_to_embed([request.question, *texts.values()])
            await trio.to_thread.run_sync(backend.vectors, embed)
            supports = partial(learned.supports, backend)
        answer = await self._ask(
            "card",
            "write crux cards: validated records of why two positions differ",
            prompts.card_prompt(request.question, people, self._shown(lines), nonce),
            nonce,
            card_schema(request.pair, [line.id for line in lines]),
            partial(
                validate_card,
                pair=pair,
                authors=authors,
                names=self._setup.names,
                question=request.question,
                texts=texts,
                supports=supports,
            ),
            key=(f"card:{request.room}", 0),
            attempts=self._setup.settings.rooms.card_attempts,
        )
        uncertain: dict[str, float] = {}
        reading: dict[str, Any] | None = None
        if answer.value is not None and supports is not None:
            uncertain = uncertain_citations(answer.value, request.question, texts, supports)
            room = [line.text for line in request.lines]
            found = await trio.to_thread.run_sync(learned.read_crux_type, backend, room)
            reading = {
                "type": found.type,
                "probability": found.probability,
                "uncertain": found.uncertain,
            }
        return CardAnswer(
            ok=answer.ok,
            card=answer.value.model_dump(mode="json") if answer.value is not None else None,
            uncertain=uncertain,
            type_reading=reading,
            raw=answer.raw,
            problems=answer.problems,
            attempts=answer.attempts,
            reading=answer.reading,
            usage=answer.usage,
        )

    # ─── helpers ────────────────────────────────────────────────────────────

    def _shown(self, lines: list[Line]) -> list[Said]:
        names = self._setup.names
        return [Said(x.id, x.speaker, names.get(x.speaker, x.speaker), x.text) for x in lines]

    def _nonce(self, what: str, n: int) -> str:
        return f"{self._seeds.for_call(f'fence:{what}', n):08x}"

    async def _ask(
        self,
        role: str,
        task: str,
        user: str,
        nonce: str,
        schema: dict[str, Any],
        validate: Validator[Any],
        *,
        key: tuple[str, int],
        attempts: int,
        complete_part: Callable[[Any], Any] | None = None,
    ) -> Answer[Any]:
        settings = self._setup.roles[role]
        return await ask_json(
            self._model(role),
            [
                ChatMessage("system", prompts.analyst_system(task, nonce, schema)),
                ChatMessage("user", user),
            ],
            schema=schema,
            validate=validate,
            seed=lambda attempt: self._seeds.for_call(f"{role}:{key[0]}", key[1], attempt),
            max_attempts=attempts,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            feedback=True,
            complete_part=complete_part,
        )
