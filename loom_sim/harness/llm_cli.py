"""Run Simon Willison's ``llm`` command line with llama.cpp's context and reply length set.

The shipped ``llm-chat`` target drives ``llm chat -m SmolLM2``, a chat program nobody here
wrote. Its SmolLM2 plugin builds ``llama_cpp.Llama`` with no context size and asks for replies
with no length: llama.cpp then keeps a context of 512 tokens and lets a reply run until that
context is full, so the chat dies on its second or third turn ("Requested tokens (531) exceed
context window of 512"). The plugin offers no option for either. This launcher changes those two
defaults and nothing else, then hands the command line to ``llm`` itself, so what the simulated
user drives is still ``llm``'s own REPL, plugin and model::

    python -m loom_sim.harness.llm_cli [--n-ctx N] [--max-tokens N] [--seed N] chat -m SmolLM2

``--n-ctx 0`` (the default) means the context the model was trained with (8,192 tokens for
SmolLM2), as llama.cpp reads it from the model file; ``--max-tokens`` (default 256) caps each
reply; ``--seed`` fixes llama.cpp's sampling, so a session given the same seed and the same
questions gets the same replies (llama.cpp draws a random seed otherwise). A value a plugin
passes explicitly still wins.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


def split_options(argv: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """This launcher's own leading options, and the rest of the line for ``llm``."""
    options = {"n_ctx": 0, "max_tokens": 256, "seed": -1}
    args = list(argv)
    while args[:1] and args[0] in ("--n-ctx", "--max-tokens", "--seed"):
        if len(args) < 2 or not args[1].isdigit():
            raise SystemExit(f"llm_cli: {args[0]} needs a whole number of tokens")
        options[args[0][2:].replace("-", "_")] = int(args[1])
        args = args[2:]
    return options, args


def set_defaults(n_ctx: int, max_tokens: int, seed: int = -1) -> None:
    """Make these the defaults of every ``Llama`` built, and every chat reply asked for, from
    now on in this process."""
    import llama_cpp

    build = llama_cpp.Llama.__init__
    reply = llama_cpp.Llama.create_chat_completion

    def with_context(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("n_ctx", n_ctx)
        if seed >= 0:
            kwargs.setdefault("seed", seed)
        build(self, *args, **kwargs)

    def with_length(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("max_tokens") is None:
            kwargs["max_tokens"] = max_tokens
        return reply(self, *args, **kwargs)

    llama_cpp.Llama.__init__ = with_context  # type: ignore[method-assign]
    llama_cpp.Llama.create_chat_completion = with_length  # type: ignore[method-assign]


def main(argv: Sequence[str] | None = None) -> None:
    options, rest = split_options(sys.argv[1:] if argv is None else argv)
    set_defaults(**options)
    from llm.cli import cli

    cli.main(args=rest, prog_name="llm")


if __name__ == "__main__":
    main()
