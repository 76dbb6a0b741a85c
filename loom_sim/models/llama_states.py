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
The states of every slot in the process share one budget (:class:`StateBudget`), the least
recently used dropped first.

The replies are the same with or without it: a restored state is the very cache the earlier
call wrote, and llama.cpp reads the new prompt's suffix after it as it would after its own.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PromptStates", "StateBudget", "context_size", "copy_state", "process_budget", "restore"]


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens ``a`` and ``b`` share from the start."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class StateBudget:
    """The bytes that kept prompt states may hold, for every slot of a process together.

    Why one budget per process, not per slot: the process's memory is what a user has to
    fit, and how the states are spread over slots (one persona slot in a plain run, one per
    model file in a matrix) is the run's business. The least recently used state of any slot
    goes first. A lock guards the bookkeeping, because slots run their calls in worker threads
    of their own; a slot's own ``before`` is serialised by that slot's lock already."""

    def __init__(self, capacity_bytes: int):
        self.capacity_bytes = capacity_bytes
        self.lock = threading.Lock()
        self._owners: weakref.WeakSet[PromptStates] = weakref.WeakSet()
        self._clock = itertools.count()

    def join(self, states: PromptStates) -> None:
        with self.lock:
            self._owners.add(states)

    def tick(self) -> int:
        """The next use's stamp: a larger stamp is a more recent use."""
        return next(self._clock)

    @property
    def size_bytes(self) -> int:
        return sum(owner.size_bytes for owner in list(self._owners))

    def settle(self) -> None:
        """Drop the least recently used states until what is kept fits (call under ``lock``)."""
        owners = list(self._owners)
        total = sum(owner.size_bytes for owner in owners)
        while total > self.capacity_bytes:
            held = [(entry.stamp, owner, tokens) for owner in owners
                    for tokens, entry in owner._states.items()]  # fmt: skip
            if not held:
                return
            _, owner, tokens = min(held, key=lambda item: item[0])
            total -= owner._states.pop(tokens).size
            owner.evicted += 1


#: The process's budget (``LOOM_SIM_PROMPT_STATES_MB`` sets it; 0 keeps none). 64 MiB holds
#: a state or two of a persona's prompts (~18 KB a token for the embedded model: a 2,000-token
#: prompt is ~35 MB): what a re-prompted turn and the Q&A probes at the last turns go back
#: to. Measured on the README's job: 192 MiB held ~155 MiB more at the peak than none and
#: saved ~5 s of ~180 (the Q&A probes read less); 64 MiB keeps most of that time.
DEFAULT_BUDGET_MB = 64


@functools.cache
def process_budget() -> StateBudget:
    """The one :class:`StateBudget` of this process, made on first use."""
    raw = os.environ.get("LOOM_SIM_PROMPT_STATES_MB", "").strip()
    try:
        mb = max(0, int(raw)) if raw else DEFAULT_BUDGET_MB
    except ValueError:
        mb = DEFAULT_BUDGET_MB
    return StateBudget(mb << 20)


@dataclass(eq=False)
class _Kept:
    state: Any  # a LlamaState
    size: int
    stamp: int


class PromptStates:
    """The states one llama.cpp slot has left, by the tokens they hold (see the module)."""

    def __init__(
        self,
        capacity_bytes: int | None = None,
        *,
        min_tokens: int = 256,
        snapshot: Callable[[Any], Any] | None = None,
        budget: StateBudget | None = None,
    ):
        # A capacity of its own makes a budget of its own (tests, a caller that wants one);
        # otherwise the slot shares the process's.
        if budget is None:
            budget = StateBudget(capacity_bytes) if capacity_bytes is not None else process_budget()
        self.budget = budget
        self.min_tokens = min_tokens
        self._snapshot = snapshot or copy_state
        self._states: OrderedDict[tuple[int, ...], _Kept] = OrderedDict()  # tokens -> state
        self.saved = 0  # states saved, restored, dropped: what a benchmark or a test reads
        self.restored = 0
        self.evicted = 0
        budget.join(self)

    @property
    def capacity_bytes(self) -> int:
        return self.budget.capacity_bytes

    @property
    def size_bytes(self) -> int:
        return sum(kept.size for kept in list(self._states.values()))

    def before(self, llama: Any, prompt: list[int]) -> None:
        """Call before ``llama`` reads ``prompt`` (under the slot's lock): keep the live state
        if the prompt would throw most of it away; bring back a kept one it can reuse more of.

        The order is what makes it safe under a tight budget: the state chosen to come back is
        held by reference from the moment it is chosen, the live state is copied before it is
        overwritten, and only once the chosen one is loaded may anything be dropped to fit."""
        live = tuple(llama.input_ids[: llama.n_tokens].tolist())
        held = shared_prefix(live, prompt)
        budget = self.budget
        with budget.lock:
            best: _Kept | None = None
            reuse = held
            room = context_size(llama)
            for tokens, kept in self._states.items():
                if len(tokens) > room:  # kept by a larger context than this one is now
                    continue
                shared = shared_prefix(tokens, prompt)
                if shared > reuse:
                    best, reuse = kept, shared
            # A restore copies the whole cache back: worth it only for a real saving.
            if best is not None and reuse - held < self.min_tokens:
                best = None
            if best is not None:
                best.stamp = budget.tick()
        keep = len(live) - held >= self.min_tokens and budget.capacity_bytes > 0
        snapshot = None
        if keep and live not in self._states:
            snapshot = self._snapshot(llama)  # before a restore overwrites the live cache
        if best is not None:
            restore(llama, best.state)
            self.restored += 1
        if keep:
            with budget.lock:
                self._keep(live, snapshot)
                budget.settle()

    def _keep(self, tokens: tuple[int, ...], snapshot: Any) -> None:
        """Record ``tokens``' state (``snapshot``; None: it is kept already), under the lock."""
        kept = self._states.get(tokens)
        if kept is not None:  # kept already (brought back, then left again unchanged)
            kept.stamp = self.budget.tick()
            self._states.move_to_end(tokens)
            return
        if snapshot is None:  # kept when looked at, dropped since by another slot's settle
            return
        # A kept state that the new one extends holds nothing the new one does not.
        for old in [t for t in self._states if len(t) <= len(tokens) and tokens[: len(t)] == t]:
            del self._states[old]
        self._states[tokens] = _Kept(snapshot, _bytes(snapshot), self.budget.tick())
        self.saved += 1


def copy_state(llama: Any) -> Any:
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


def restore(llama: Any, state: Any) -> None:
    """Load ``state`` (a :func:`copy_state`) into ``llama``, whose context may be larger than
    the one that saved it (a slot's context grows: :meth:`loom_sim.models.llama_slots._Loaded.
    ensure_loaded`).

    What ``Llama.load_state`` does, without its copies: it copies the state's bytes into a new
    buffer first (tens of MB, held at once with the state itself: the peak of a run's memory)
    and writes the state's one row of logits over every row of its logits array. Neither is
    needed: llama.cpp reads the state from our buffer, and a loaded state reads its last token
    again before anything is sampled (``_requires_eval``), so no kept logits are read."""
    import ctypes

    ctx = getattr(getattr(llama, "_ctx", None), "ctx", None)
    if ctx is None or not isinstance(getattr(state, "llama_state", None), ctypes.Array):
        # another kind of state (the binding's own save_state): its own load, the token
        # array fitted to this context's size
        ids = state.input_ids
        if len(ids) != len(llama.input_ids):
            import copy

            import numpy as np

            fitted = np.zeros(len(llama.input_ids), dtype=ids.dtype)
            keep = min(len(ids), len(fitted))
            fitted[:keep] = ids[:keep]
            state = copy.copy(state)
            state.input_ids = fitted
        llama.load_state(state)
        return
    import llama_cpp

    n = int(state.n_tokens)
    size = int(state.llama_state_size)
    if llama_cpp.llama_state_set_data(ctx, state.llama_state, size) != size:
        raise RuntimeError("llama.cpp could not load a kept prompt state")
    llama.input_ids[:n] = state.input_ids[:n]
    llama.n_tokens = n
    llama._requires_eval = True
    llama._seed = state.seed


def context_size(llama: Any, default: int | None = None) -> int:
    """The size of ``llama``'s context; a stand-in without one: ``default``, else the length
    of its token array."""
    n_ctx = getattr(llama, "n_ctx", None)
    if callable(n_ctx):
        return int(n_ctx())
    return default if default is not None else len(llama.input_ids)


def _bytes(state: Any) -> int:
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)
