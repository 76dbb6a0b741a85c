"""The judge: scores a window of turns against a rubric and answers in parsed JSON.

Protocol: ``Judge`` -> ``Judgement``. The judge asks for structured output (natively where the
provider has it), parses tolerantly, checks the required keys, and retries an unusable answer a
bounded number of times; then it reports the failure instead of inventing a score.
"""

from __future__ import annotations

import json
from typing import Any

from loom_sim.messages import Body, Judge, Judgement
from loom_sim.models.base import BadModelReply, ChatMessage, ModelClient, ModelRequest, Usage
from loom_sim.models.json_repair import parse_json
from loom_sim.runtime.actor import Actor
from loom_sim.runtime.seeds import SeedSource
from loom_sim.scoring.rubrics import fence, render


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
        nonce = f"{self._seeds.for_call('judge-fence', request.turn):08x}"
        system = render(
            "judge_system",
            begin=f"<<<TRANSCRIPT {nonce}>>>",
            end=f"<<<END TRANSCRIPT {nonce}>>>",
            schema=json.dumps(request.schema),
        )
        user = render("judge_user", rubric=request.rubric, transcript=fence(request.window, nonce))
        usage = Usage()
        raw = ""
        error = "no attempt made"
        for attempt in range(self._max_attempts):
            response = await self._model.complete(
                ModelRequest(
                    messages=[ChatMessage("system", system), ChatMessage("user", user)],
                    max_tokens=self._max_tokens,
                    temperature=0.0,
                    seed=self._seeds.for_call(f"judge:{request.rubric_id}", request.turn, attempt),
                    json_schema=request.schema,
                )
            )
            usage = usage + response.usage
            raw = response.text
            try:
                parsed = response.parsed if response.parsed is not None else parse_json(raw)
                _check_required(parsed, request.schema)
            except BadModelReply as err:
                error = str(err)
                continue
            return Judgement(ok=True, parsed=parsed, raw=raw, attempts=attempt + 1, usage=usage)
        return Judgement(ok=False, raw=raw, error=error, attempts=self._max_attempts, usage=usage)


def _check_required(parsed: Any, schema: dict[str, Any]) -> None:
    if not isinstance(parsed, dict):
        raise BadModelReply(f"judge answered {type(parsed).__name__}, not a JSON object")
    missing = [key for key in schema.get("required", ()) if key not in parsed]
    if missing:
        raise BadModelReply(f"judge answer lacks {', '.join(missing)}")
