"""Drafting a reply's next tokens from its own context, checked by the model in one batch.

On a CPU each decoded token costs a full pass over the weights (~9 ms for the embedded model
on 2 cores), while ten tokens read in one batch cost about four such passes. A small model's
reply often repeats its context word for word: a persona quotes its own scaffolding, a model
under evaluation says its last sentence again and again. So, as llama.cpp's own servers can
(prompt lookup), when the reply's last six to eight tokens have occurred before, the tokens
that followed them are proposed as a draft, and the model reads the last token and the draft
in one batch. The model then samples each position as it would have anyway, from its own
logits given the tokens before it; a sampled token that is not the draft's ends the batch
there, and what the draft proposed after it is thrown away (llama-cpp-python's
``Llama.generate`` does the checking and the throwing away, for any ``draft_model``).

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

#: Draft at most this many tokens: the model reads a draft in one batch, and a batch of ten
#: costs the embedded model about four single steps on 2 cores (two cost two: llama.cpp's
#: one-token kernels are its fastest), so a draft pays only when the model takes several of it.
DRAFT_TOKENS = 10
#: A draft is looked up from a match of the reply's last 8 tokens down to its last 6: a run
#: that long is already repeated text (a quoted instruction, a sentence said again), whose
#: continuation the model takes most of. Shorter matches are found in any prose and are mostly
#: refused: with matches down to one token, the replies of bench_prose.py were written 2x
#: slower; with these, as fast as without drafts, and the README job's replies 20% faster.
LONGEST_MATCH = 8
SHORTEST_MATCH = 6
#: Tokens the model must take of a draft for its batch to have paid for itself.
PAYS = 2
#: The most steps without a draft after drafts that did not pay, in a row.
MOST_PAUSE = 16


class ContextDraft:
    """Proposes the tokens that followed the most recent earlier occurrence of the reply's
    last ``LONGEST_MATCH`` (down to ``SHORTEST_MATCH``) tokens. Called by ``Llama.generate``
    after each pass with the tokens so far; marks the batch it returns as a draft for
    :func:`read_draft`.

    A draft pays only when the model takes several of its tokens (see ``DRAFT_TOKENS``). So
    the next draft's length follows what the model took of the last one, and a draft that did
    not pay is followed by steps without one, twice as many after each in a row: a reply that
    stops repeating itself pays for a few refused drafts, not for one at every step."""

    def __init__(self, llama: Any, tokens: int = DRAFT_TOKENS):
        self.llama = llama
        self.most = tokens
        self.size = tokens  # the next draft's length
        self.pending: tuple[int, int] | None = None  # the last draft's start and length
        self.pause = 0  # steps to go without a draft
        self.refusals = 0  # drafts in a row that did not pay
        self.proposed = 0  # tokens drafted, taken, and batches: for a benchmark or a test
        self.taken = 0
        self.batches = 0

    def __call__(self, input_ids: Any, /, **_: Any) -> Any:
        ids = np.asarray(input_ids)
        self._learn(len(ids))
        if self.pause:
            self.pause -= 1
            return np.array([], dtype=np.intc)
        found = propose(ids, self.size, LONGEST_MATCH, SHORTEST_MATCH)
        if len(found):
            # The batch the model reads next starts where the tokens read so far end.
            self.llama.drafted_at = self.llama.n_tokens
            self.pending = (self.llama.n_tokens, len(found))
            self.proposed += len(found)
            self.batches += 1
        return found

    def _learn(self, length: int) -> None:
        """What the model took of the last draft, from how far the tokens got: the batch
        started with the last sampled token, and the first token it refused (or the one after
        the draft) ends the tokens it was handed back."""
        if self.pending is None:
            return
        start, size = self.pending
        self.pending = None
        taken = min(max(length - start - 2, 0), size)
        self.taken += taken
        if taken < PAYS:
            self.refusals += 1
            self.pause = min(2 ** (self.refusals - 1), MOST_PAUSE)
            self.size = max(self.size // 2, 1)
        else:
            self.refusals = 0
            self.size = self.most if taken == size else max(taken + 1, 2)


def propose(ids: Any, most: int, longest: int, shortest: int = 1) -> Any:
    """The up to ``most`` tokens after the latest earlier occurrence of ``ids``' last
    ``longest`` tokens (or fewer, down to ``shortest``: the longest found); empty when none is
    found."""
    n = len(ids)
    for size in range(min(longest, n - 1), max(shortest, 1) - 1, -1):
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
