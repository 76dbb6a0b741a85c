"""The judge call: a rubric and a fenced window in, a parsed JSON answer (or why not) out.

The judge asks for structured output (natively where the provider has it), parses tolerantly,
checks the required keys, and retries an unusable answer a bounded number of times; then it
reports the failure instead of inventing a score. The judge actor (``actors/judge.py``) serves
this over its inbox; nothing else builds judge prompts.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_sim.judging.fence import fence
from loom_sim.judging.fit import TEMPLATE_SLACK, fit_window
from loom_sim.judging.prompts import render
from loom_sim.judging.structured import ask_json, require_keys
from loom_sim.messages import Judge, Judgement, WindowTurn
from loom_sim.models.base import (
    ChatMessage,
    ModelClient,
    Preloadable,
    answer_tokens,
    enforces_schema,
    schema_text,
)
from loom_sim.seeds import SeedSource


async def judge(
    model: ModelClient,
    seeds: SeedSource,
    request: Judge,
    *,
    max_attempts: int = 3,
    max_tokens: int = 400,
) -> Judgement:
    # One nonce per rollout, not per call: the fence holds by encoding, not by a secret (see
    # fence.py), and a nonce that changed with every turn would make each turn's transcript a
    # new prompt to the model's prefix cache.
    nonce = f"{seeds.for_call('judge-fence', 0):08x}"
    system = render("judge_system", material=bool(request.material))
    # A model held to the schema by its decoder (llama.cpp's grammar) need not read it: on a
    # CPU every prompt token costs time, and a small model copies a schema's words into its
    # answer ("type", "string") more than it learns from them.
    schema = "" if enforces_schema(model) else schema_text(request.schema)

    def user_prompt(window: Sequence[WindowTurn]) -> str:
        fenced = fence(list(window), nonce, request.material)
        return render(
            "judge_user",
            brief=request.brief,
            transcript=fenced,
            rubric=request.rubric,
            schema=schema,
        )

    if isinstance(model, Preloadable):  # its own token counts, not an estimate
        await model.preload()
    system_tokens = model.count_tokens(system)
    window, fitted = fit_window(
        request.window,
        lambda turns: system_tokens + model.count_tokens(user_prompt(turns)),
        # What the answer may take, not what was asked: the embedded model writes a schema's
        # keys and short values, far less than ``max_tokens``, and a window cut for room the
        # answer never uses would make the judge read the window again from its start.
        model.context_tokens - answer_tokens(model, request.schema, max_tokens) - TEMPLATE_SLACK,
    )
    user = user_prompt(window)
    answer = await ask_json(
        model,
        [ChatMessage("system", system), ChatMessage("user", user)],
        schema=request.schema,
        validate=require_keys(request.schema),
        seed=lambda attempt: seeds.for_call(f"judge:{request.rubric_id}", request.turn, attempt),
        max_attempts=max_attempts,
        max_tokens=max_tokens,
        temperature=0.0,
    )
    if answer.ok:
        return Judgement(
            ok=True,
            parsed=answer.value,
            raw=answer.raw,
            attempts=answer.attempts,
            usage=answer.usage,
            fitted=fitted,
        )
    return Judgement(
        ok=False,
        raw=answer.raw,
        error=answer.error,
        attempts=answer.attempts,
        usage=answer.usage,
        fitted=fitted,
    )
