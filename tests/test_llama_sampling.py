"""Grammar-held sampling checks the sampled token first where it is asked to
(loom_sim/models/llama_sampling.py: a JSON answer's values): the reply still follows the grammar,
at temperature 0 it is the reply the library's grammar-first chain writes, and most steps never
filter the whole vocabulary. Elsewhere the library's chain samples, as before."""

from __future__ import annotations

import re

import pytest

from loom_sim.models.prose import prose_grammar

pytestmark = pytest.mark.slow

PROMPT = (
    "<|im_start|>system\nYou are Marcus, a software developer who believes his company's "
    "codebase hides a surveillance system.<|im_end|>\n<|im_start|>user\nHow was your week? "
    "Answer in two sentences.<|im_end|>\n<|im_start|>assistant\n"
)
GRAMMAR = prose_grammar((1, 2), max_words=16)
SENTENCES = re.compile(r"^[A-Z“\"][^.!?\n]*[.!]( [A-Z“\"][^.!?\n]*[.!])?$")


@pytest.fixture(scope="module")
def models():
    from llama_cpp import Llama

    from loom_sim.models.gguf import embedded_model_path, runnable_path
    from loom_sim.models.llama_sampling import check_first_llama

    settings = {"model_path": str(runnable_path(embedded_model_path())), "n_ctx": 512}
    checking = check_first_llama()(**settings, verbose=False)
    checking.check_first = True
    library = Llama(**settings, verbose=False)
    yield checking, library
    checking.close()
    library.close()


def _write(llama, temperature: float, seed: int) -> tuple[str, object]:
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_string(GRAMMAR, verbose=False)
    tokens = llama.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llama.set_seed(seed)
    written = []
    sampler = None
    for token in llama.generate(tokens, temp=temperature, repeat_penalty=1.0, grammar=grammar):
        sampler = sampler or llama._sampler
        if token == llama.token_eos() or len(written) >= 60:
            break
        written.append(token)
    return llama.detokenize(written).decode(), sampler


def test_at_temperature_0_it_writes_what_the_library_writes(models):
    checking, library = models
    ours, sampler = _write(checking, 0.0, 1)
    theirs, _ = _write(library, 0.0, 1)
    assert ours == theirs
    assert SENTENCES.match(ours), ours
    # most tokens were the model's own first choice: the vocabulary was filtered for few
    assert sampler.sampled > 10
    assert sampler.refused < sampler.sampled / 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sampled_replies_follow_the_grammar(models, seed):
    checking, _ = models
    text, sampler = _write(checking, 0.8, seed)
    assert SENTENCES.match(text), text
    assert sampler.refused < sampler.sampled


def test_a_penalised_request_keeps_the_librarys_chain(models):
    from llama_cpp import LlamaGrammar

    from loom_sim.models.llama_sampling import CheckFirstSampler

    checking, _ = models
    grammar = LlamaGrammar.from_string(GRAMMAR, verbose=False)
    plain = checking._init_sampler(temp=0.8, repeat_penalty=1.1, grammar=grammar)
    assert not isinstance(plain, CheckFirstSampler)
    held = checking._init_sampler(temp=0.8, repeat_penalty=1.0, grammar=grammar)
    assert isinstance(held, CheckFirstSampler)
    assert not isinstance(checking._init_sampler(temp=0.8), CheckFirstSampler)


def test_only_inside_checking_first(models):
    from llama_cpp import LlamaGrammar

    from loom_sim.models.llama_sampling import CheckFirstSampler, checking_first

    checking, library = models
    grammar = LlamaGrammar.from_string(GRAMMAR, verbose=False)
    checking.check_first = False
    try:
        assert not isinstance(checking._init_sampler(temp=0.8, grammar=grammar), CheckFirstSampler)
        with checking_first(checking):
            assert isinstance(checking._init_sampler(temp=0.8, grammar=grammar), CheckFirstSampler)
        assert checking.check_first is False
        with checking_first(library):  # a plain Llama samples as it always does
            assert not isinstance(
                library._init_sampler(temp=0.8, grammar=grammar), CheckFirstSampler
            )
    finally:
        checking.check_first = True
