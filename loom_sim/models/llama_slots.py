"""llama.cpp slots: each role's context over the process's one loaded model of a file.

Each role of a run (the persona, the model under evaluation, each of the judge's rubrics) keeps
a slot of its own, so that its prompt prefix survives the other roles' calls: llama.cpp reuses
the KV cache of the prefix a prompt shares with the slot's last one. A slot is a ``Llama`` (a
context: its KV cache and compute buffers) over the one model the process loaded for the file
(:mod:`~loom_sim.models.llama_shared`), created on first use, grown as its prompts need
(:meth:`_Loaded.ensure_loaded`), and freed when a run's phase is done with it
(:func:`release_slots`). :class:`~loom_sim.models.local.LocalLlamaClient` is the client over
a slot.

llama.cpp is **not thread-safe**: one ``trio.Lock`` per slot so waiting tasks queue without
holding threads, and a ``threading.Lock`` inside the worker as the real guarantee (it also
covers a second trio run in another thread).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from loom_sim import cpu
from loom_sim.core.memory import give_back
from loom_sim.models.base import ModelError
from loom_sim.models.gguf import quiet_llama_cpp, runnable_path
from loom_sim.models.llama_shared import sharing_models
from loom_sim.models.llama_states import PromptStates, context_size

__all__ = ["CONTEXT_STEP", "PROMPT_BATCH", "REVISITED_SLOTS", "release_slots", "slot"]


#: The slots whose callers go back to earlier prompts, so they keep the prompt states they
#: leave (:mod:`~loom_sim.models.llama_states`): the persona's — a re-prompted turn may return
#: to the first attempt's prefix, and the Q&A probes ask the persona as it was at earlier
#: turns once the rollout is over. Other roles only go forward; keeping theirs would copy
#: caches nobody reads.
REVISITED_SLOTS = frozenset({"persona"})


# ─── the process-wide model cache ───────────────────────────────────────────

#: The attention keys are cached as Q8_0, not F16. Over a long prompt the cache, not the
#: weights, is most of what each token reads: on a 2-core x86 machine with a 3,000-token prompt
#: this reads prompts 20-28% and short runs of tokens (a written answer's keys) 30-40% faster
#: (benchmarks/bench_scoring.py); keys at 8 bits are as good as lossless. (Values stay F16:
#: llama.cpp quantizes those only with flash attention, which is slower on short runs here.)
KEY_CACHE_TYPE = 8  # GGML_TYPE_Q8_0

#: Prompt tokens read per batch. llama.cpp's compute buffer grows with the batch (the attention
#: scores of a batch against the whole context), and 512, llama-cpp-python's default, held
#: ~56 MiB more per slot than 128 after a 3,000-token prompt, while reading it no faster on a
#: CPU (316 against 354 tokens/s on a 2-core x86 machine; benchmarks/bench_memory.py).
PROMPT_BATCH = 128

#: A slot's context starts at this many tokens and grows by as many at a time (see
#: :meth:`_Loaded.ensure_loaded`).
CONTEXT_STEP = 512


@dataclass(eq=False)
class _Loaded:
    """One model file: its ``Llama`` (once loaded) and the locks that serialise its use."""

    path: Path
    n_ctx: int
    slot: str = ""
    llama: Any = None
    formatter: Any = None  # the chat template, for prompts written token by token
    async_lock: trio.Lock = field(default_factory=trio.Lock)
    thread_lock: threading.Lock = field(default_factory=threading.Lock)

    grammars: dict[str, Any] = field(default_factory=dict)  # GBNF text -> LlamaGrammar
    states: PromptStates | None = None  # kept prompt states (REVISITED_SLOTS)
    grown: int = 0  # times the context grew (what a test reads)

    def grammar(self, text: str) -> Any:
        """The parsed grammar of a request's GBNF text, parsed once per text (a debate asks
        with a few shapes' grammars, over and over)."""
        parsed = self.grammars.get(text)
        if parsed is None:
            from llama_cpp import LlamaGrammar

            parsed = self.grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return parsed

    def ensure_loaded(self, spec: str, tokens: int = 0) -> Any:
        """The slot's ``Llama``, loaded, its context holding at least ``tokens`` (call in a
        worker thread, under ``thread_lock``).

        A context holds its KV cache for its whole size from the start (~17 KB a token for
        the embedded model), and most slots never fill the model's window (the README's job:
        its Q&A judge reads ~1,400 tokens of 4,096). So a context starts at
        :data:`CONTEXT_STEP` tokens and grows by steps when a prompt needs more, up to
        ``n_ctx``: the cache so far is copied into the larger context (llama.cpp's own
        state), so nothing is read again and the reply is the one the larger context would
        have written (tests/test_llama_contexts.py)."""
        wanted = min(self.n_ctx, max(CONTEXT_STEP, -(-tokens // CONTEXT_STEP) * CONTEXT_STEP))
        if self.llama is None:
            self.llama = self._construct(spec, wanted)
        elif context_size(self.llama, self.n_ctx) < wanted:
            from loom_sim.models.llama_states import copy_state, restore

            state = copy_state(self.llama) if self.llama.n_tokens else None
            grown = self._construct(spec, wanted)
            self.llama.close()
            self.llama = grown
            if state is not None:
                restore(grown, state)
            self.grown += 1
        return self.llama

    def _construct(self, spec: str, n_ctx: int) -> Any:
        try:
            from loom_sim.models.llama_sampling import check_first_llama

            Llama = check_first_llama()
        except ImportError:
            raise ModelError(
                f"{spec} needs llama-cpp-python, which is not installed; "
                "run `pip install llama-cpp-python`."
            ) from None
        quiet_llama_cpp()  # its load messages silenced, nothing else printed lost
        try:
            # The cores this process may use (llama.cpp's default is half the machine's,
            # os.cpu_count() all of them: both wrong under an affinity mask).
            threads = cpu.threads()
            settings: dict[str, Any] = {
                "model_path": str(runnable_path(self.path)),
                "n_ctx": n_ctx,
                "n_batch": PROMPT_BATCH,
                "n_ubatch": PROMPT_BATCH,
                "n_threads": threads,
                "n_threads_batch": threads,
                "verbose": False,
            }
            # Every slot of one file reads one loaded model (llama_shared).
            with sharing_models():
                try:
                    return Llama(**settings, type_k=KEY_CACHE_TYPE)
                except (ValueError, RuntimeError):  # a model whose heads it does not fit
                    return Llama(**settings)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(
                f"{spec}: llama.cpp could not load {self.path} ({exc}); "
                "check that it is a valid GGUF model."
            ) from None

    def chat_prompt(self, messages: list[dict[str, str]]) -> list[int] | None:
        """The tokens ``create_chat_completion`` would read for ``messages`` (the model's own
        chat template, from its GGUF metadata); None for a model that llama-cpp-python maps
        to a built-in format instead. Call under ``thread_lock``, loaded."""
        llama = self.llama
        if llama.chat_handler is not None or llama.chat_format != "chat_template.default":
            return None
        if self.formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return llama._model.token_get_text(token) if token != -1 else ""

            self.formatter = Jinja2ChatFormatter(
                template=llama.metadata["tokenizer.chat_template"],
                eos_token=text(llama.token_eos()),
                bos_token=text(llama.token_bos()),
            )
        formatted = self.formatter(messages=messages)
        return llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )


_CACHE: dict[tuple[Path, str], _Loaded] = {}
_CACHE_GUARD = threading.Lock()


@atexit.register
def _close_models() -> None:
    """Free the models while llama_cpp is still intact (its ``__del__`` fails at shutdown)."""
    with _CACHE_GUARD:
        for loaded in _CACHE.values():
            if loaded.llama is not None and loaded.thread_lock.acquire(timeout=5):
                try:
                    loaded.llama.close()
                    loaded.llama = None
                finally:
                    loaded.thread_lock.release()


def release_slots(keep: Iterable[str]) -> int:
    """Free the llama.cpp contexts of every slot but the roles in ``keep`` (and their own
    slots, ``judge/…`` for ``judge``): what a run does when a phase ends, so the next phase's
    slots do not come on top of the last one's (the model under evaluation's context, once
    every rollout has ended and scoring begins). How many were freed; a slot used again loads
    again. A call in progress on a slot is waited for."""
    kept = tuple(keep)

    def idle(slot: str) -> bool:
        return not any(slot == role or slot.startswith(f"{role}/") for role in kept)

    with _CACHE_GUARD:
        chosen = [loaded for (_, slot), loaded in _CACHE.items() if idle(slot)]
    freed = 0
    for loaded in chosen:
        with loaded.thread_lock:
            if loaded.llama is not None:
                loaded.llama.close()
                loaded.llama = None
                loaded.formatter = None
                loaded.grammars.clear()  # parsed against the freed context's vocabulary
                freed += 1
    if freed:
        give_back()
    return freed


def _shared(path: Path, n_ctx: int, slot: str) -> _Loaded:
    """One ``Llama`` per (file, slot). Roles get their own slot: llama.cpp reuses the KV cache
    of the previous prompt's common prefix, and a persona and an interlocutor taking turns on
    one instance would throw it away on every call, re-reading thousands of prompt tokens."""
    with _CACHE_GUARD:
        loaded = _CACHE.get((path, slot))
        if loaded is None:  # the first client's n_ctx wins
            states = PromptStates() if slot in REVISITED_SLOTS else None
            loaded = _CACHE[(path, slot)] = _Loaded(path, n_ctx, slot, states=states)
        return loaded


def slot(path: Path, n_ctx: int, name: str) -> _Loaded:
    """The slot ``name`` of the model file ``path`` (the first client's ``n_ctx`` wins)."""
    return _shared(path, n_ctx, name)
