"""A grammar-held draw that is the library's own, without filtering the whole vocabulary.

llama-cpp-python holds a reply to a grammar by putting the grammar first in its sampler chain:
grammar, top-k (40), typical, top-p, min-p, temperature, the seeded draw. The grammar is applied
to every token of the vocabulary at every step (49,152 for the embedded model), about 11 ms a
token on a 2-core machine, as much as the model's own step. Of all that filtering, the rest of
the chain reads only the 40 most likely tokens the grammar allows (top-k keeps those; everything
after it works on what top-k kept). So :class:`TopAllowedSampler` walks the model's tokens from
the most likely down, checks each against the grammar alone, stops at the 40th it allows, and
hands those 40, in that order, to the rest of the library's chain — the same samplers with the
same settings and the same seeded draw. The array they read is the one the grammar-first chain
hands them, so the token drawn is the same; only tokens of exactly equal logits at the 40th
place could be ordered otherwise (the library's partial sort leaves their order open). At
temperature 0 the chain after the grammar is the greedy choice: the first token allowed.

Unlike the check-first sampler (:mod:`~loom_sim.models.llama_sampling`), which draws from the
model's own distribution and is used for a JSON answer's values, this keeps the draw a prose
reply under a grammar has always had — a debate message, a persona's answer to a question —
which is what the debates' measured failure rates rest on.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

__all__ = ["TopAllowedSampler", "top_allowed_sampler"]

#: The model's most likely tokens checked one by one; a step where fewer than ``top_k`` of
#: them are allowed (a grammar that allows little: the end of a sentence) filters the whole
#: vocabulary instead, as the library does.
_RANKED = 128
#: llama.cpp's ``llama_token_data``, as numpy reads an array of them.
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class TopAllowedSampler:
    """The library's grammar-first chain, drawn from the ``top_k`` most likely tokens the
    grammar allows (see the module). Stands where ``Llama.generate`` keeps its sampler (only
    ``sample`` is called)."""

    def __init__(self, tail: Any, check: Any, n_vocab: int, top_k: int):
        self.tail = tail  # the chain after the grammar: top-k ... the draw (or greedy)
        self.check = check  # the grammar alone, kept in step with the tokens taken
        self.n_vocab = n_vocab
        self.top_k = top_k
        self.checked = 0  # tokens checked one by one, steps that filtered all: for a test
        self.filtered = 0
        self.sampled = 0

    def sample(self, ctx: Any, idx: int = -1) -> int:
        import llama_cpp

        pointer = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        allowed = self._top_allowed(logits)
        size = len(allowed)
        data = (llama_cpp.llama_token_data * size)()
        for i, token in enumerate(allowed):
            data[i] = llama_cpp.llama_token_data(token, float(logits[token]), 0.0)
        array = llama_cpp.llama_token_data_array(data, size, -1, True)
        llama_cpp.llama_sampler_apply(self.tail.sampler, ctypes.byref(array))
        token = int(data[array.selected].id)
        llama_cpp.llama_sampler_accept(self.tail.sampler, token)
        llama_cpp.llama_sampler_accept(self.check.sampler, token)
        self.sampled += 1
        return token

    def _top_allowed(self, logits: Any) -> list[int]:
        """The ``top_k`` most likely tokens the grammar allows, most likely first (fewer when
        the grammar allows fewer)."""
        found: list[int] = []
        for token in _ranked(logits, min(self.n_vocab, _RANKED)):
            if self._allows(int(token)):
                found.append(int(token))
                if len(found) == self.top_k:
                    return found
        # A grammar that allows little here (a sentence's end): one pass over the vocabulary,
        # as the library's chain makes at every step.
        return self._filter_all(logits)[: self.top_k]

    def _filter_all(self, logits: Any) -> list[int]:
        import llama_cpp

        self.filtered += 1
        size = self.n_vocab
        data = (llama_cpp.llama_token_data * size)()
        view = np.ctypeslib.as_array(data).view(_TOKEN_DATA)
        view["id"] = np.arange(size, dtype=np.int32)
        view["logit"] = logits
        view["p"] = 0.0
        array = llama_cpp.llama_token_data_array(data, size, -1, False)
        llama_cpp.llama_sampler_apply(self.check.sampler, ctypes.byref(array))
        allowed = np.flatnonzero(~np.isinf(view["logit"]))
        if not len(allowed):
            raise RuntimeError("the grammar allows no token here")
        order = np.lexsort((allowed, -logits[allowed]))
        return [int(t) for t in allowed[order]]

    def _allows(self, token: int) -> bool:
        import llama_cpp

        self.checked += 1
        one = llama_cpp.llama_token_data(token, 0.0, 0.0)
        array = llama_cpp.llama_token_data_array(ctypes.pointer(one), 1, -1, False)
        llama_cpp.llama_sampler_apply(self.check.sampler, ctypes.byref(array))
        return not math.isinf(one.logit)


def _ranked(logits: Any, count: int) -> Any:
    """The ``count`` most likely tokens, most likely first (equal logits by token id)."""
    if count >= len(logits):
        return np.lexsort((np.arange(len(logits)), -logits))
    part = np.argpartition(-logits, count - 1)[:count]
    return part[np.lexsort((part, -logits[part]))]


def top_allowed_sampler(llama: Any, check: Any, settings: dict[str, Any]) -> TopAllowedSampler:
    """The sampler for ``llama``'s grammar-held draw with ``settings`` (``_init_sampler``'s
    keyword arguments: a temperature of 0 or more, no penalties, no mirostat): the chain
    llama-cpp-python builds after the grammar, fed the grammar's best tokens."""
    from llama_cpp import _internals as internals

    tail = internals.LlamaSampler()
    temp = settings.get("temp", 0.8)
    top_k = int(settings.get("top_k", 40))
    if temp == 0.0:
        tail.add_greedy()
        top_k = 1  # the most likely token allowed
    else:
        tail.add_top_k(top_k)
        tail.add_typical(settings.get("typical_p", 1.0), 1)
        tail.add_top_p(settings.get("top_p", 0.95), 1)
        tail.add_min_p(settings.get("min_p", 0.05), 1)
        tail.add_temp(temp)
        tail.add_dist(llama._seed)
    if top_k <= 0:
        top_k = llama.n_vocab()  # no top-k: every token the grammar allows
    return TopAllowedSampler(tail, check, llama.n_vocab(), top_k)
