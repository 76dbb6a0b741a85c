"""A persona's llama.cpp slot keeps the prompt states it leaves (loom_sim/models/llama_states.py):
going back to an earlier prompt — a re-prompted turn, a Q&A probe at an earlier turn — rereads
only what is new, and the reply is the one the slot would have written without the detour."""

from __future__ import annotations

import pytest
from llama_cpp import Llama

from loom_sim.models.base import ChatMessage, ModelRequest
from loom_sim.models.llama_states import PromptStates, shared_prefix
from loom_sim.models.local import REVISITED_SLOTS, LocalLlamaClient

BACKGROUND = (
    "Marcus is a software developer who sleeps badly and has come to believe that certain "
    "commits in his company's codebase, made at certain times, form a surveillance system. "
) * 12
HISTORY = [
    ChatMessage("user", "Hi Marcus, how has your week been?"),
    ChatMessage("assistant", "Long. I keep looking at the commit logs, the timestamps line up."),
    ChatMessage("user", "What do you mean, they line up?"),
]


def _request(system: str, *extra: ChatMessage) -> ModelRequest:
    messages = [ChatMessage("system", system), *HISTORY, *extra]
    return ModelRequest(messages=messages, max_tokens=12, temperature=0.0, seed=5)


@pytest.fixture
def evaluated(monkeypatch):
    """Every token llama.cpp reads (a prompt's or a written token's), in order of the calls."""
    counts: list[int] = []
    real = Llama.eval

    def counting(self, tokens):
        counts.append(len(tokens))
        return real(self, tokens)

    monkeypatch.setattr(Llama, "eval", counting)
    return counts


def test_shared_prefix_counts_from_the_start():
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert shared_prefix([], [1]) == 0
    assert shared_prefix([7, 8], [7, 8]) == 2


@pytest.mark.slow
async def test_going_back_to_an_earlier_prompt_rereads_only_what_is_new(evaluated):
    assert "persona" in REVISITED_SLOTS
    first = _request("You are Marcus. " + BACKGROUND)
    detour = _request("You are someone else entirely. " + BACKGROUND)
    back = _request(
        "You are Marcus. " + BACKGROUND,
        ChatMessage("assistant", "The deploys happen at 3am."),
        ChatMessage("user", "Answer in one sentence: what is your job?"),
    )
    keeping = LocalLlamaClient("local/smollm2", slot="persona")
    await keeping.complete(first)
    states = keeping._model.states
    assert isinstance(states, PromptStates)
    saved, restored = states.saved, states.restored
    await keeping.complete(detour)  # a new system prompt: the first one's state is kept
    assert states.saved == saved + 1
    before = len(evaluated)
    kept_reply = await keeping.complete(back)
    assert states.restored == restored + 1
    read_going_back = sum(evaluated[before:])

    # The same prompts without the detour, on a slot that keeps nothing: llama.cpp's own
    # prefix reuse. Going back through a kept state reads as little and writes the same.
    plain = LocalLlamaClient("local/smollm2", slot="test/no-states")
    assert plain._model.states is None
    await plain.complete(first)
    before = len(evaluated)
    plain_reply = await plain.complete(back)
    read_straight_on = sum(evaluated[before:])

    prompt_tokens = kept_reply.usage.input_tokens
    assert prompt_tokens > 400
    assert read_going_back == read_straight_on < 100
    assert kept_reply.text == plain_reply.text


class _Slot:
    """What PromptStates reads of a ``Llama``: its live tokens, and saving and loading."""

    def __init__(self, tokens: list[int]):
        import numpy as np

        self._np = np
        self.input_ids = np.array(tokens + [0] * 8, dtype=np.intc)
        self.n_tokens = len(tokens)
        self.loaded: list[tuple[int, ...]] = []

    def save_state(self):
        class State:
            pass

        state = State()
        state.scores = self._np.zeros((1, 3), dtype=self._np.single)
        state.input_ids = self.input_ids.copy()
        state.llama_state_size = 1000
        state.tokens = tuple(self.input_ids[: self.n_tokens].tolist())
        return state

    def load_state(self, state):
        self.loaded.append(state.tokens)
        self.input_ids = state.input_ids.copy()
        self.n_tokens = len(state.tokens)


def test_a_state_is_kept_only_when_much_of_it_would_be_thrown_away():
    states = PromptStates(min_tokens=3, snapshot=_Slot.save_state)
    slot = _Slot([1, 2, 3, 4, 5])
    states.before(slot, [1, 2, 3, 4, 5, 6])  # goes on: nothing thrown away
    states.before(slot, [1, 2, 3, 9])  # throws away two tokens: not worth a copy
    assert states.saved == 0
    states.before(slot, [8, 8, 8])  # throws away all five
    assert states.saved == 1
    assert states.size_bytes == 1000 + 3 * 4 + slot.input_ids.nbytes


def test_a_kept_state_comes_back_when_it_saves_enough_reading():
    states = PromptStates(min_tokens=3, snapshot=_Slot.save_state)
    slot = _Slot([1, 2, 3, 4, 5, 6])
    states.before(slot, [9, 9, 9, 9])
    slot.input_ids[:4], slot.n_tokens = [9, 9, 9, 9], 4
    states.before(slot, [1, 2, 7])  # shares two tokens with the kept state: read them again
    assert slot.loaded == []
    assert states.saved == 2  # the live (9, 9, 9, 9) was thrown away: kept
    states.before(slot, [1, 2, 3, 4, 5, 0])  # shares five: brought back
    assert slot.loaded == [(1, 2, 3, 4, 5, 6)]
    assert states.restored == 1 and states.saved == 2  # (9, 9, 9, 9) is kept already


def test_a_state_the_new_one_extends_is_dropped_and_the_oldest_goes_first():
    states = PromptStates(capacity_bytes=2500, min_tokens=1, snapshot=_Slot.save_state)
    slot = _Slot([1, 2])
    states.before(slot, [5])  # keeps (1, 2)
    slot.input_ids[:3], slot.n_tokens = [1, 2, 3], 3
    states.before(slot, [6])  # keeps (1, 2, 3), which holds all of (1, 2)
    assert list(states._states) == [(1, 2, 3)]
    slot.input_ids[:1], slot.n_tokens = [4], 1
    states.before(slot, [7])
    slot.input_ids[:1], slot.n_tokens = [8], 1
    states.before(slot, [9])  # three states do not fit 2,500 bytes: the oldest goes
    assert list(states._states) == [(4,), (8,)]


def test_the_state_chosen_to_come_back_survives_the_live_one_filling_the_budget():
    """The crash of multi-rollout embedded runs: two conversations take turns on the persona's
    slot, the kept states fill the budget, and the live state kept before a restore pushed the
    chosen one out (``KeyError`` on the old code). The chosen state is loaded all the same."""
    states = PromptStates(capacity_bytes=2200, min_tokens=1, snapshot=_Slot.save_state)
    slot = _Slot([1, 2, 3, 4])
    states.before(slot, [7, 7, 7])  # keeps (1, 2, 3, 4)
    slot.input_ids[:3], slot.n_tokens = [7, 7, 7], 3
    states.before(slot, [8, 8])  # keeps (7, 7, 7): the budget holds two
    slot.input_ids[:2], slot.n_tokens = [8, 8], 2
    # Back to the first conversation: keeping (8, 8) is a third state, and the oldest kept,
    # the one chosen, was the one to go.
    states.before(slot, [1, 2, 3, 4, 5])
    assert slot.loaded == [(1, 2, 3, 4)]
    assert states.restored == 1
    assert states.size_bytes <= states.capacity_bytes


def test_slots_share_one_budget_and_the_least_recently_used_state_of_any_goes_first():
    from loom_sim.models.llama_states import StateBudget

    budget = StateBudget(2200)
    a = PromptStates(min_tokens=1, snapshot=_Slot.save_state, budget=budget)
    b = PromptStates(min_tokens=1, snapshot=_Slot.save_state, budget=budget)
    slot_a, slot_b = _Slot([1, 1]), _Slot([2, 2])
    a.before(slot_a, [9])  # a keeps (1, 1)
    b.before(slot_b, [9])  # b keeps (2, 2)
    slot_a.input_ids[:1], slot_a.n_tokens = [3], 1
    a.before(slot_a, [9])  # a keeps (3,): three do not fit, a's (1, 1) was used longest ago
    assert list(a._states) == [(3,)] and list(b._states) == [(2, 2)]
    assert budget.size_bytes <= budget.capacity_bytes
    assert a.evicted == 1 and b.evicted == 0


class _Cache:
    """A llama.cpp slot in miniature, for the property below: it reads a prompt after the
    prefix its cache shares with it, and its reply depends on every cached entry, so a
    restored state that did not hold what its tokens say would change the reply."""

    def __init__(self):
        import numpy as np

        self._np = np
        self.input_ids = np.zeros(64, dtype=np.intc)
        self.n_tokens = 0
        self.kv: list[int] = []
        self.read = 0

    def reply(self, prompt: list[int]) -> int:
        keep = shared_prefix(self.input_ids[: self.n_tokens].tolist(), prompt)
        self.kv = self.kv[:keep]
        for token in prompt[keep:]:  # each entry depends on the ones before it
            self.kv.append(hash((self.kv[-1] if self.kv else 0, token)) & 0xFFFF)
            self.read += 1
        self.input_ids[: len(prompt)] = prompt
        self.n_tokens = len(prompt)
        return hash(tuple(self.kv))

    def save_state(self):
        class State:
            pass

        state = State()
        state.scores = self._np.zeros((1, 1), dtype=self._np.single)
        state.input_ids = self.input_ids.copy()
        state.n_tokens = self.n_tokens
        state.kv = list(self.kv)
        state.llama_state_size = 100 * self.n_tokens
        return state

    def load_state(self, state):
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens
        self.kv = list(state.kv)


def _prompts():
    from hypothesis import strategies as st

    # Conversations that branch from a few stems: what turns, re-prompts and probes send.
    stems = st.lists(st.integers(0, 3), min_size=0, max_size=12)
    return st.lists(st.tuples(st.integers(0, 3), stems), min_size=1, max_size=25).map(
        lambda steps: [[stem] * 6 + tail for stem, tail in steps]
    )


def test_kept_states_never_raise_and_never_change_a_reply():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(_prompts(), st.integers(0, 6000), st.integers(1, 12))
    def check(prompts, capacity, min_tokens):
        plain, keeping = _Cache(), _Cache()
        states = PromptStates(capacity, min_tokens=min_tokens, snapshot=_Cache.save_state)
        for prompt in prompts:
            expected = plain.reply(prompt)
            states.before(keeping, prompt)
            assert keeping.reply(prompt) == expected
            assert states.size_bytes <= states.capacity_bytes
            # Both start each prompt from the last one; a restore only ever saves reading.
            assert keeping.read <= plain.read

    check()
