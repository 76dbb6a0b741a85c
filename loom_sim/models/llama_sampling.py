"""Grammar-held sampling that checks one token, not the whole vocabulary, when it can.

llama-cpp-python puts a request's grammar in its sampler chain, where it is applied to every
token of the vocabulary at every step (49,152 for the embedded model): on a 2-core machine
that costs about 11 ms a token, more than the model's own step at a short prompt (7 ms). Most
steps do not need it: the token the model would have chosen anyway is usually one the grammar
allows. So, as llama.cpp's own samplers do (``common_sampler_sample``), a token is first
sampled without the grammar and checked against it alone; only when the grammar refuses it is
the whole vocabulary filtered and the token sampled again.

At temperature 0 the reply is the one the grammar-first chain gives (the most likely token
the grammar allows either way). Above it, a token the grammar allows is drawn from the
model's own distribution rather than one renormalised over the allowed tokens — the same
approximation llama.cpp makes. So it is used where that does not matter: the values of a JSON
answer written by its schema (a score, a number, a reason; :mod:`~loom_sim.models.llama_json`
asks for it with :func:`checking_first`). A prose reply under a grammar — a debate message, a
persona's answer — keeps the library's draw: there the draw is what the speaker says, and its
distribution is what the debates' measured failure rates rest on. It is made without filtering
the whole vocabulary too, from the model's best tokens the grammar allows
(:mod:`~loom_sim.models.llama_allowed`). Requests with repetition penalties, logit processors
or mirostat keep the library's chain as it is: those samplers remember what they are shown.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

__all__ = ["CheckFirstSampler", "check_first_llama", "checking_first"]


class CheckFirstSampler:
    """Samples without the grammar, checks the token against it; on refusal, samples under
    it. Stands where ``Llama.generate`` keeps its sampler (only ``sample`` is called)."""

    def __init__(self, free: Any, held: Any, check: Any):
        self.free = free  # the chain without the grammar
        self.held = held  # the library's chain, grammar first
        self.check = check  # the grammar alone, kept in step with the tokens taken
        self.refused = 0
        self.sampled = 0

    def sample(self, ctx: Any, idx: int = -1) -> int:
        import llama_cpp

        token = self.free.sample(ctx, idx)
        if self._allows(token):
            self.held.accept(token)  # its grammar follows the tokens taken
        else:
            self.refused += 1
            token = self.held.sample(ctx, idx)
        llama_cpp.llama_sampler_accept(self.check.sampler, token)
        self.sampled += 1
        return token

    def _allows(self, token: int) -> bool:
        import llama_cpp

        data = llama_cpp.llama_token_data(token, 0.0, 0.0)
        one = llama_cpp.llama_token_data_array(ctypes.pointer(data), 1, -1, False)
        llama_cpp.llama_sampler_apply(self.check.sampler, ctypes.byref(one))
        return not math.isinf(data.logit)


@cache
def check_first_llama() -> type:
    """``llama_cpp.Llama`` whose grammar-held sampling filters no more of the vocabulary than
    it needs: inside :func:`checking_first` it checks the sampled token first, elsewhere it
    draws the library's token from the grammar's best (:mod:`~loom_sim.models.llama_allowed`);
    and which reads a draft of its reply in one batch (:mod:`~loom_sim.models.llama_drafts`).
    Built on first use: importing this module loads no llama.cpp."""
    from llama_cpp import Llama
    from llama_cpp import _internals as internals

    from loom_sim.models.llama_allowed import top_allowed_sampler
    from loom_sim.models.llama_drafts import read_draft

    class CheckFirstLlama(Llama):
        check_first = False  # on only inside ``checking_first``
        drafted_at: int | None = None  # where a draft's batch starts (llama_drafts)

        def eval(self, tokens: Any) -> None:
            # A draft's batch is read with logits at every position (llama_drafts).
            if not read_draft(self, list(tokens)):
                super().eval(tokens)

        def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
            grammar = kwargs.get("grammar")
            neutral = (
                not args
                and kwargs.get("repeat_penalty", 1.0) == 1.0
                and kwargs.get("frequency_penalty", 0.0) == 0.0
                and kwargs.get("presence_penalty", 0.0) == 0.0
                and kwargs.get("logits_processor") is None
                and kwargs.get("mirostat_mode", 0) == 0
                and kwargs.get("temp", 0.8) >= 0.0
            )
            if grammar is None or not neutral:
                return super()._init_sampler(*args, **kwargs)
            check = internals.LlamaSampler()
            check.add_grammar(self._model, grammar)
            if self.check_first:
                held = super()._init_sampler(*args, **kwargs)
                free = super()._init_sampler(**{**kwargs, "grammar": None})
                return CheckFirstSampler(free, held, check)
            # The library's draw, from the grammar's best tokens only (llama_allowed).
            return top_allowed_sampler(self, check, kwargs)

    return CheckFirstLlama


@contextmanager
def checking_first(llama: Any) -> Iterator[None]:
    """Within it, ``llama``'s grammar-held sampling checks the sampled token first (a plain
    ``Llama``, which cannot, samples as it always does)."""
    if not hasattr(llama, "check_first"):
        yield
        return
    before = llama.check_first
    llama.check_first = True
    try:
        yield
    finally:
        llama.check_first = before
