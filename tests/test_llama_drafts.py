"""A prose reply from llama.cpp is drafted from its own context and checked a batch at a time
(loom_sim/models/llama_drafts.py): the draft is the continuation of the latest earlier
occurrence of the reply's last tokens, and every token of the reply is still the model's own
choice given the tokens before it."""

from __future__ import annotations

import numpy as np
import pytest

from loom_sim.models.llama_drafts import propose

PROMPT = (
    "<|im_start|>system\nYou repeat what you are told, word for word.<|im_end|>\n"
    "<|im_start|>user\nSay this three times: I keep seeing the same patterns in the code, "
    "and nobody believes me.<|im_end|>\n<|im_start|>assistant\n"
)


def ids(*tokens: int) -> np.ndarray:
    return np.array(tokens, dtype=np.intc)


def test_the_draft_follows_the_latest_occurrence_of_the_last_tokens():
    #                0  1  2  3  4  5  6  7  8  9
    context = ids(5, 6, 7, 1, 5, 6, 8, 9, 5, 6)
    assert propose(context, 10, 3).tolist() == [8, 9, 5, 6]  # after the 5 6 at 4-5, not 0-1
    assert propose(context, 10, 3, shortest=3).tolist() == []  # no earlier 9 5 6


def test_a_longer_match_is_preferred_and_the_draft_is_bounded():
    context = ids(1, 2, 3, 4, 9, 2, 3, 7, 1, 2, 3)
    assert propose(context, 10, 3).tolist() == [4, 9, 2, 3, 7, 1, 2, 3]  # 1 2 3, not 2 3
    assert propose(context, 2, 3).tolist() == [4, 9]
    assert propose(context, 10, 1).tolist() == [7, 1, 2, 3]  # after the latest 3 alone
    assert propose(ids(1, 2, 3), 10, 3).tolist() == []
    assert propose(ids(7), 10, 3).tolist() == []


class Slot:
    """What a draft reads of its Llama: where the tokens read so far end."""

    n_tokens = 100
    drafted_at = None


def test_a_draft_that_does_not_pay_is_followed_by_steps_without_one():
    from loom_sim.models.llama_drafts import ContextDraft

    looping = np.tile(np.arange(16, dtype=np.intc), 40)  # 0..15 said again and again
    slot = Slot()
    draft = ContextDraft(slot, tokens=10)

    def step(read: int) -> int:
        """The next call after ``read`` tokens were read: the draft's length, 0 for none.
        As in ``Llama.generate``: the tokens so far are those read and the last sampled."""
        slot.n_tokens = read
        return len(draft(looping[: read + 1]))

    assert step(99) == 10 and slot.drafted_at == 99
    # The model took none of it: that step is its own, then a draft half as long.
    assert step(100) == 0 and draft.refusals == 1
    assert step(101) == 5
    # It took all five: a full draft again.
    assert step(101 + 5 + 1) == 10 and draft.taken == 5 and draft.refusals == 0
    # Drafts that do not pay, in a row: 1, 2, 4, 8 steps without one after each.
    read = 107
    for pause in (1, 2, 4, 8):
        read += 1  # took nothing
        steps = [step(read + i) for i in range(pause)]
        assert steps == [0] * pause, (pause, steps)
        read += pause - 1
        read += 1
        assert step(read) > 0
    assert draft.size == 1  # halved each time, never below one token


def test_prose_that_does_not_repeat_itself_is_not_drafted():
    from loom_sim.models.llama_drafts import ContextDraft

    slot = Slot()
    draft = ContextDraft(slot)
    rng = np.random.default_rng(1)
    prose = rng.integers(0, 49_152, size=300).astype(np.intc)
    prose[200:203] = prose[50:53]  # a three-token phrase said again is not a loop
    for end in range(150, 300):
        slot.n_tokens = end - 1
        assert len(draft(prose[:end])) == 0
    assert draft.batches == 0


@pytest.fixture(scope="module")
def llamas():
    from llama_cpp import Llama

    from loom_sim.models.gguf import embedded_model_path, runnable_path
    from loom_sim.models.llama_sampling import check_first_llama

    settings = {"model_path": str(runnable_path(embedded_model_path())), "n_ctx": 512}
    ours = check_first_llama()(**settings, verbose=False)
    reference = Llama(**settings, logits_all=True, verbose=False)
    yield ours, reference
    ours.close()
    reference.close()


def _reply(llama, temperature: float, seed: int):
    from loom_sim.models.llama_drafts import drafting

    tokens = llama.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llama.set_seed(seed)
    written: list[int] = []
    with drafting(llama) as draft:
        for token in llama.generate(tokens, temp=temperature, repeat_penalty=1.0, reset=True):
            if token == llama.token_eos() or len(written) >= 60:
                break
            written.append(token)
    assert llama.draft_model is None  # drafting is on only inside ``drafting``
    return tokens, written, draft


@pytest.mark.slow
def test_each_token_of_a_drafted_reply_is_the_models_own_choice(llamas):
    ours, reference = llamas
    prompt, written, draft = _reply(ours, 0.0, 1)
    assert len(written) >= 15
    assert draft is not None and draft.batches > 0 and draft.proposed > 0  # it drafted
    # Read the prompt and the reply at once, every position's logits kept: at temperature 0
    # each token of the reply is the most likely one after the tokens before it. A draft's
    # batch read with the wrong positions' logits would fail this at once.
    reference.reset()
    reference.eval(prompt + written)
    for i, token in enumerate(written):
        logits = reference.scores[len(prompt) - 1 + i]
        assert logits[token] >= logits.max() - 0.25, (i, reference.detokenize(written[:i]))


@pytest.mark.slow
def test_a_drafted_reply_is_the_same_for_the_same_seed(llamas):
    ours, _ = llamas
    first = _reply(ours, 0.8, 7)[1]
    assert _reply(ours, 0.8, 7)[1] == first
    assert len(first) > 0
