"""The judge: scores a window of turns against a rubric and answers in parsed JSON.

Protocol: ``Judge`` -> ``Judgement``. The call itself — fence, prompt, structured output,
tolerant parsing, bounded retries — is :func:`loom_sim.judging.judge.judge`; this actor serves
it one request at a time to whoever asks (the rollout's trigger checks, an adversary, the
scoring engine, the probe).
"""

from __future__ import annotations

from loom_sim.actors.base import Actor

from loom_sim.judging.judge import judge
from loom_sim.messages import Body, Judge, Judgement
from loom_sim.models.base import ModelClient
from loom_sim.seeds import SeedSource


class JudgeActor(Actor):
    role = "judge"

    def __init__(
        self, model: ModelClient, seeds: SeedSource, *, max_attempts: int = 3, max_tokens: int = 400
    ):
        self._model = model
        self._seeds = seeds
        self._max_attempts = max_attempts
        self._max_tokens = max_tokens

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
