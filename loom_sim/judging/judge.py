"""The judge call: a rubric and a fenced window in, a parsed JSON answer (or why not) out.

The judge asks for structured output (natively where the provider has it), parses tolerantly,
checks the required keys, and retries an unusable answer a bounded number of times; then it
reports the failure instead of inventing a score. The judge actor (``actors/judge.py``) serves
this over its inbox; nothing else builds judge prompts.
"""

from __future__ import annotations

import json
from typing import Any

from loom_sim.judging.fence import MATERIAL, fence, markers
from loom_sim.judging.prompts import render
from loom_sim.messages import Judge, Judgement
from loom_sim.models.base import BadModelReply, ChatMessage, ModelClient, ModelRequest, Usage
from loom_sim.models.json_repair import parse_json
from loom_sim.seeds import SeedSource


async def judge(
    model: ModelClient,
    seeds: SeedSource,
    request: Judge,
    *,
    max_attempts: int = 3,
    max_tokens: int = 400,
) -> Judgement:
    nonce = f"{seeds.for_call('judge-fence', request.turn):08x}"
    begin, end = markers(nonce)
    material = markers(nonce, MATERIAL) if request.material else None
    system = render(
        "judge_system", begin=begin, end=end, material=material, schema=json.dumps(request.schema)
    )
    fenced = fence(request.window, nonce, request.material)
    user = render("judge_user", rubric=request.rubric, transcript=fenced)
    usage = Usage()
    raw = ""
    error = "no attempt made"
    for attempt in range(max_attempts):
        response = await model.complete(
            ModelRequest(
                messages=[ChatMessage("system", system), ChatMessage("user", user)],
                max_tokens=max_tokens,
                temperature=0.0,
                seed=seeds.for_call(f"judge:{request.rubric_id}", request.turn, attempt),
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
    return Judgement(ok=False, raw=raw, error=error, attempts=max_attempts, usage=usage)


def _check_required(parsed: Any, schema: dict[str, Any]) -> None:
    if not isinstance(parsed, dict):
        raise BadModelReply(f"judge answered {type(parsed).__name__}, not a JSON object")
    missing = [key for key in schema.get("required", ()) if key not in parsed]
    if missing:
        raise BadModelReply(f"judge answer lacks {', '.join(missing)}")
