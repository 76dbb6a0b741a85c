"""Drafting a reply's next tokens from its own context, checked by the model in one batch.

On a CPU each decoded token costs a full pass over the weights (~10 ms for the embedded model
on 2 cores), while a batch of tokens is read at a fraction of that per token. A reply often
repeats its context: a persona quotes its own scaffolding, a model under evaluation repeats
its last sentence, a long name or phrase comes back. So, as llama.cpp's own servers can
(prompt lookup), the tokens that followed the last earlier occurrence of the reply's last few
tokens are proposed as a draft, and the model reads the last token and the draft in one batch.
The model then samples each position as it would have anyway, from its own logits given the
tokens before it; a sampled token that is not the draft's ends the batch there, and what the
draft proposed after it is thrown away (llama-cpp-python's ``Llama.generate`` does the
checking and the throwing away, for any ``draft_model``).

Every token is still drawn once, from the model's distribution given the reply so far, with
the seed's next draw: the draft changes how many tokens a pass reads, never which token is
chosen. What can differ is the last bits of a logit: llama.cpp computes a batch of tokens
with other kernels than one token, so a draw that falls on the boundary between two tokens can
go the other way. A reply is as likely as before, and the same seed still gives the same reply
(the drafts are a function of the tokens).

llama-cpp-python turns on logits for every token of every batch once a draft model is given
at construction (``logits_all``): its prompts would then pay for a row of the vocabulary per
token. Here the draft is set only around a prose reply (:func:`drafting`), and only a draft's
own batch asks for every position's logits (:func:`read_draft`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["ContextDraft", "drafting", "read_draft"]

#: Draft at most this many tokens: a longer draft costs more when its first token is wrong,
#: and a reply seldom repeats more than a clause unchanged (measured on the README job's
#: persona and interlocutor replies: 8, 10, 12 and 16 read within 2% of each other; 4 gave
#: half the gain).
DRAFT_TOKENS = 10
#: The longest run of the reply's last tokens looked up in its context; a shorter one is tried
#: when it is not found, down to one token.
LOOKUP_TOKENS = 3


class ContextDraft:
    """Proposes the tokens that followed the most recent earlier occurrence of the last
    ``LOOKUP_TOKENS`` (then fewer) tokens. Called by ``Llama.generate`` after each pass with
    the tokens so far; marks the batch it returns as a draft for :func:`read_draft`."""

    def __init__(self, llama: Any, tokens: int = DRAFT_TOKENS, lookup: int = LOOKUP_TOKENS):
        self.llama = llama
        self.tokens = tokens
        self.lookup = lookup
        self.proposed = 0  # tokens drafted, for a benchmark or a test to read
        self.batches = 0

    def __call__(self, input_ids: Any, /, **_: Any) -> Any:
        found = propose(np.asarray(input_ids), self.tokens, self.lookup)
        if len(found):
            # The batch the model reads next starts where the tokens read so far end.
            self.llama.drafted_at = self.llama.n_tokens
            self.proposed += len(found)
            self.batches += 1
        return found


def propose(ids: Any, most: int, lookup: int) -> Any:
    """The up to ``most`` tokens after the latest earlier occurrence of ``ids``' last
    ``lookup`` tokens (or fewer, the longest found); empty when none is found."""
    n = len(ids)
    for size in range(min(lookup, n - 1), 0, -1):
        tail = ids[n - size :]
        # Every earlier window of that size (the last, ``tail`` itself, excluded).
        windows = np.lib.stride_tricks.sliding_window_view(ids[: n - 1], size)
        hits = np.flatnonzero((windows == tail).all(axis=1))
        if len(hits):
            start = int(hits[-1]) + size
            return ids[start : min(n, start + most)]
    return np.array([], dtype=np.intc)


def read_draft(llama: Any, tokens: list[int]) -> bool:
    """Read ``tokens`` (the last sampled token and a draft) with logits at every position, so
    each can be sampled; False, having read nothing, when ``tokens`` is not a draft's batch
    (a prompt: its logits are needed at its last token only). Stands in ``Llama.eval``."""
    drafted_at = getattr(llama, "drafted_at", None)
    llama.drafted_at = None
    if drafted_at is None or drafted_at != llama.n_tokens or len(tokens) > llama.n_batch:
        return False
    start = llama.n_tokens
    llama._ctx.kv_cache_seq_rm(-1, start, -1)
    llama._batch.set_batch(batch=tokens, n_past=start, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[start : start + len(tokens)] = tokens
    llama.n_tokens += len(tokens)
    llama._requires_eval = False
    return True


@contextmanager
def drafting(llama: Any) -> Iterator[ContextDraft | None]:
    """Within it, ``llama``'s replies are drafted from their context (a ``Llama`` that cannot
    read a draft's batch, not built by :func:`~loom_sim.models.llama_sampling.check_first_llama`,
    decodes as it always does: None)."""
    if not hasattr(llama, "drafted_at"):
        yield None
        return
    draft = ContextDraft(llama)
    llama.draft_model = draft
    try:
        yield draft
    finally:
        llama.draft_model = None
        llama.drafted_at = None
