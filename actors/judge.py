"""The judge: scores a window of turns against a rubric and answers in parsed JSON.

Protocol: ``Judge`` -> ``Judgement``. The call itself — fence, prompt, structured output,
tolerant parsing, bounded retries — is :func:`loom_sim.judging.judge.judge`; this actor serves
it one request at a time to whoever asks (the rollout's trigger checks, an adversary, the
scoring engine, the probe).
"""

from __future__ import annotations

from loom_sim.actors.base import Actor, ActorContext

from loom_sim.judging.judge import judge
from loom_sim.messages import Body, Judge, Judgement
from loom_sim.models.base import ModelClient
from loom_sim.plugins.actors import actor
from loom_sim.seeds import SeedSource


@actor("judge", summary="scores windows of turns against rubrics, in parsed JSON", order=50)
class JudgeActor(Actor):
    role = "judge"

    def __init__(
        self, model: ModelClient, seeds: SeedSource, *, max_attempts: int = 3, max_tokens: int = 400
    ):
        self._model = model
        self._seeds = seeds
        self._max_attempts = max_attempts
        self._max_tokens = max_tokens

    @classmethod
    def from_context(cls, context: ActorContext) -> JudgeActor:
        """``context.settings`` may set ``max_attempts`` and ``max_tokens`` (the probe's)."""
        settings = context.settings or {}
        return cls(
            context.model("judge"),
            context.seeds,
            max_attempts=int(settings.get("max_attempts", 3)),
            max_tokens=int(settings.get("max_tokens", 400)),
        )

    async def handle(self, body: Body) -> Body | None:
        match body:
            case Judge():
                return await self._judge(body)
        raise TypeError(f"judge cannot handle {type(body).__name__}")

    async def _judge(self, request: Judge) -> Judgement:
        return await judge(
            self._model,
            self._seeds,
            request,
            max_attempts=self._max_attempts,
            max_tokens=self._max_tokens,
        )
