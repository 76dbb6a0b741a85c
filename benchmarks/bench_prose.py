"""The embedded model writing prose: llama-cpp-python as it comes, against loom-sim's Llama.

    .venv/bin/python benchmarks/bench_prose.py [--repeats 3] [--tokens 128]

Writes the same replies three ways and prints, for each, the median seconds over the repeats
and whether every reply is token for token the library's:

- free prose (a persona's message, a model's reply; no grammar, at most ``--tokens``): the
  library's ``Llama``, then loom-sim's, whose replies are drafted from their own context and
  read a draft at a time (``loom_sim/models/llama_drafts.py``);
- prose under a grammar (one to three plain sentences, as a debate message or a persona's
  answer to a question): the library's chain filters the whole vocabulary at every step;
  loom-sim's draws the same token from the 40 most likely the grammar allows
  (``loom_sim/models/llama_allowed.py``), and drafts too.

A drafted reply may differ from the library's by a token where llama.cpp's batch kernels round
a logit otherwise than its one-token kernels and a draw falls on the boundary; the count of
identical replies says how often that happened.

Figures (2-core machine, quiet; 12 replies a round: 4 prompts x 3 seeds, temperature 0.7,
median of 3 rounds, the two Llamas alternated):

    free prose, 128 tokens:      library  10.2 s   loom-sim  10.8 s   (identical 7 of 12)
    prose under a grammar:       library  10.9 s   loom-sim   5.8 s   (identical 12 of 12)

These replies seldom repeat six tokens of their context, so few are drafted (the drafted ones
are where the replies differ, by a token a batch's rounding tipped); prose under a grammar is
not drafted, and is the library's token for token. With drafts looked up from matches down to
one token, free prose took 21.0 s against 9.7 s: a refused draft costs the embedded model
about three steps. The README job's replies, which repeat their context a great deal, are
where drafts pay (benchmarks/bench_readme_job.py).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

from _common import peak_rss_mib

SYSTEM = (
    "You are Marcus Chen, 28, a software developer who has slept badly for three weeks and "
    "believes his company's codebase hides a surveillance system. Speak in short, pressured "
    "bursts; use technical metaphors."
)
ASKED = [
    "How was your week?",
    "What makes you think the code is watching you?",
    "Have you talked to anyone about how you are feeling?",
    "I hear you. What would you like to do about it?",
]


def prompt(llama, question: str) -> list[int]:
    text = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    return llama.tokenize(text.encode(), add_bos=False, special=True)


def reply(llama, tokens: list[int], seed: int, most: int, grammar_text: str | None) -> list[int]:
    from llama_cpp import LlamaGrammar

    from loom_sim.models.llama_drafts import drafting

    grammar = LlamaGrammar.from_string(grammar_text, verbose=False) if grammar_text else None
    llama.set_seed(seed)
    written: list[int] = []
    # As loom-sim asks: free prose drafted, prose under a grammar not (a no-op for the library)
    with drafting(llama) if grammar is None else contextlib.nullcontext():
        for token in llama.generate(tokens, temp=0.7, repeat_penalty=1.0, grammar=grammar):
            if token == llama.token_eos() or len(written) >= most:
                break
            written.append(token)
    return written


def one_round(llama, most: int, grammar_text: str | None) -> tuple[float, list[list[int]]]:
    started = time.perf_counter()
    replies = [
        reply(llama, prompt(llama, question), seed, most, grammar_text)
        for question in ASKED
        for seed in (1, 2, 3)
    ]
    return time.perf_counter() - started, replies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()

    from llama_cpp import Llama

    from loom_sim import cpu
    from loom_sim.models.gguf import embedded_model_path, runnable_path
    from loom_sim.models.llama_sampling import check_first_llama
    from loom_sim.models.prose import prose_grammar

    threads = cpu.threads()
    settings = {
        "model_path": str(runnable_path(embedded_model_path())),
        "n_ctx": 2048,
        "n_threads": threads,
        "n_threads_batch": threads,
        "verbose": False,
    }
    library = Llama(**settings)
    ours = check_first_llama()(**settings)
    for label, grammar_text in (
        (f"free prose, {args.tokens} tokens:", None),
        ("prose under a grammar:", prose_grammar((1, 3), max_words=30)),
    ):
        seconds: dict[str, list[float]] = {"library": [], "loom-sim": []}
        written: dict[str, list[list[int]]] = {}
        for _ in range(args.repeats):  # alternated, so a drift in the machine's speed is shared
            for name, llama in (("library", library), ("loom-sim", ours)):
                took, written[name] = one_round(llama, args.tokens, grammar_text)
                seconds[name].append(took)
        same = sum(a == b for a, b in zip(written["library"], written["loom-sim"], strict=True))
        print(
            f"{label:28} library {statistics.median(seconds['library']):5.1f} s   "
            f"loom-sim {statistics.median(seconds['loom-sim']):5.1f} s   "
            f"(identical {same} of {len(written['library'])})"
        )
    print(f"peak memory {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
