"""The prompt states a llama.cpp slot keeps: going back to an earlier prompt reads only what is new.

llama.cpp keeps one prompt in its KV cache: a call whose prompt shares a prefix with the last
one reads only the rest. That is all a conversation needs while it goes forward. Some callers
go back: a persona re-prompted at a turn may have its history cut where the first attempt's
was not, and the next attempt goes back to the first one's prefix; the Q&A probes ask the
persona, after the rollout, as it was at earlier turns — each such prompt shares thousands of
tokens with a prompt the slot held during the rollout and has since thrown away.

:class:`PromptStates` keeps what a call is about to throw away. Before a prompt is read it
saves the slot's state (llama.cpp's own snapshot of its KV cache, ``llama_state_get_data``) when
the new prompt would discard at least ``min_tokens`` of it, and restores a kept state whose
prefix shared with the new prompt is longer than the live one's. Saving costs a copy of the
cache (~18 KB a token for the embedded model) and happens only when a conversation changes
course — a new system prompt, a cut history, a probe at an earlier turn — not on every call.
The states are held in memory up to ``capacity_bytes``, the least recently used dropped first.

The replies are the same with or without it: a restored state is the very cache the earlier
call wrote, and llama.cpp reads the new prompt's suffix after it as it would after its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["PromptStates"]


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens ``a`` and ``b`` share from the start."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PromptStates:
    """The states one llama.cpp slot has left, by the tokens they hold (see the module)."""

    def __init__(
        self,
        capacity_bytes: int = 512 << 20,
        *,
        min_tokens: int = 256,
        snapshot: Callable[[Any], Any] | None = None,
    ):
        self.capacity_bytes = capacity_bytes
        self.min_tokens = min_tokens
        self._snapshot = snapshot or _snapshot
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()  # tokens -> LlamaState
        self.saved = 0  # states saved, restored: what a benchmark or a test reads
        self.restored = 0

    @property
    def size_bytes(self) -> int:
        return sum(_bytes(state) for state in self._states.values())

    def before(self, llama: Any, prompt: list[int]) -> None:
        """Call before ``llama`` reads ``prompt`` (under the slot's lock): keep the live state
        if the prompt would throw most of it away; bring back a kept one it can reuse more of."""
        live = tuple(llama.input_ids[: llama.n_tokens].tolist())
        held = shared_prefix(live, prompt)
        best, reuse = None, held
        for tokens in self._states:
            shared = shared_prefix(tokens, prompt)
            if shared > reuse:
                best, reuse = tokens, shared
        if len(live) - held >= self.min_tokens:
            self._keep(live, llama)
        # A restore copies the whole cache back: worth it only for a real saving.
        if best is not None and reuse - held >= self.min_tokens:
            self._states.move_to_end(best)
            llama.load_state(self._states[best])
            self.restored += 1

    def _keep(self, tokens: tuple[int, ...], llama: Any) -> None:
        if tokens in self._states:  # kept already (brought back, then left again unchanged)
            self._states.move_to_end(tokens)
            return
        # A kept state that the new one extends holds nothing the new one does not.
        for old in [t for t in self._states if len(t) <= len(tokens) and tokens[: len(t)] == t]:
            del self._states[old]
        self._states[tokens] = self._snapshot(llama)
        self.saved += 1
        while len(self._states) > 1 and self.size_bytes > self.capacity_bytes:
            self._states.popitem(last=False)


def _snapshot(llama: Any) -> Any:
    """``llama.save_state()`` without its copies: that copies its whole logits buffer (n_batch
    rows of the vocabulary, ~100 MB for the embedded model) and the cache three times. A
    restored state reads its prompt's last token again before sampling (``load_state`` marks
    it so), so one row of logits is enough, and the cache is copied once."""
    import ctypes

    import llama_cpp
    import numpy as np
    from llama_cpp.llama import LlamaState

    size = llama_cpp.llama_state_get_size(llama.ctx)
    data = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(llama.ctx, data, size)
    if written > size:
        raise RuntimeError("llama.cpp wrote more state than it said it would")
    return LlamaState(
        input_ids=llama.input_ids.copy(),
        scores=np.zeros((1, llama.n_vocab()), dtype=np.single),
        n_tokens=llama.n_tokens,
        llama_state=data,  # load_state copies from any buffer of at least llama_state_size
        llama_state_size=written,
        seed=llama._seed,
    )


def _bytes(state: Any) -> int:
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)
