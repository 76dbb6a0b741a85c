"""A prose reply under a grammar is drawn as llama-cpp-python's grammar-first chain draws it,
from the model's best tokens the grammar allows, without filtering the whole vocabulary at each
step (loom_sim/models/llama_allowed.py): the same reply for the same seed, token for token."""

from __future__ import annotations

import pytest

from loom_sim.models.prose import prose_grammar

pytestmark = pytest.mark.slow

PROMPT = (
    "<|im_start|>system\nYou are Marcus, a software developer who believes his company's "
    "codebase hides a surveillance system.<|im_end|>\n<|im_start|>user\nHow was your week? "
    "Answer in two sentences.<|im_end|>\n<|im_start|>assistant\n"
)
GRAMMAR = prose_grammar((1, 3), max_words=30)


@pytest.fixture(scope="module")
def models():
    from llama_cpp import Llama

    from loom_sim.models.gguf import embedded_model_path, runnable_path
    from loom_sim.models.llama_sampling import check_first_llama

    settings = {"model_path": str(runnable_path(embedded_model_path())), "n_ctx": 512}
    ours = check_first_llama()(**settings, verbose=False)
    library = Llama(**settings, verbose=False)
    yield ours, library
    ours.close()
    library.close()


def _write(llama, temperature: float, seed: int, **settings) -> tuple[list[int], object]:
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_string(GRAMMAR, verbose=False)
    tokens = llama.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llama.set_seed(seed)
    written: list[int] = []
    sampler = None
    for token in llama.generate(
        tokens, temp=temperature, repeat_penalty=1.0, grammar=grammar, **settings
    ):
        sampler = sampler or llama._sampler
        if token == llama.token_eos() or len(written) >= 60:
            break
        written.append(token)
    return written, sampler


@pytest.mark.parametrize("temperature", [0.0, 0.7, 1.5])
def test_the_reply_is_the_librarys_token_for_token(models, temperature):
    from loom_sim.models.llama_allowed import TopAllowedSampler

    ours, library = models
    for seed in (1, 2, 3):
        mine, sampler = _write(ours, temperature, seed)
        assert isinstance(sampler, TopAllowedSampler)
        assert mine == _write(library, temperature, seed)[0], (temperature, seed)
        assert len(mine) > 5
        # most steps checked a few dozen tokens, not the 49,152 of the vocabulary
        assert sampler.filtered < sampler.sampled / 4, (sampler.filtered, sampler.sampled)


def test_other_settings_of_the_chain_are_kept(models):
    ours, library = models
    settings = {"top_k": 5, "top_p": 0.5, "min_p": 0.1}
    for seed in (4, 5):
        mine = _write(ours, 1.0, seed, **settings)[0]
        assert mine == _write(library, 1.0, seed, **settings)[0]


def test_a_penalised_or_unheld_request_keeps_the_librarys_chain(models):
    from llama_cpp import LlamaGrammar

    from loom_sim.models.llama_allowed import TopAllowedSampler

    ours, _ = models
    grammar = LlamaGrammar.from_string(GRAMMAR, verbose=False)
    assert not isinstance(
        ours._init_sampler(temp=0.8, repeat_penalty=1.1, grammar=grammar), TopAllowedSampler
    )
    assert not isinstance(ours._init_sampler(temp=0.8), TopAllowedSampler)
    assert not isinstance(ours._init_sampler(temp=-1.0, grammar=grammar), TopAllowedSampler)
