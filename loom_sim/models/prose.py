"""Plain prose as a GBNF grammar (llama.cpp's syntax): the pieces every shape of message is
written from, and the grammar of a few plain sentences.

A request that carries a grammar is sampled under it by a model that can constrain its sampling
(the embedded one); the others ignore it, and the caller's checks apply either way. What a
grammar buys is a shape by construction: a reply of "one or two sentences" that ends at a
sentence's end instead of wherever the token cap cut it, with no list items, headers or line
breaks (and no copy of a prompt's fence marker, which the embedded model otherwise writes back).
"""

from __future__ import annotations

__all__ = ["MAX_WORDS", "MIN_WORDS", "PIECES", "prose_grammar"]

#: A word: letters (with an apostrophe or a hyphen), or a number; a quote or a bracket around
#: it, a comma or a colon after. No sentence end (. ! ?), no line break, no list marker, and
#: bounded, so that a run of digits cannot eat the reply's tokens.
PIECES = [
    "alpha ::= [a-zA-Z'’-]",
    'num ::= "$"? [0-9]{1,4} ("," [0-9]{3})? "%"?',
    'word ::= ["“(]? (alpha{1,16} | num) [,;:)"”]?',
    'first ::= ["“]? [A-Z] alpha{0,15} [,;:"”]?',
]

#: Fewest words of a sentence: a sentence of two words ("How to edit:") is not a contribution.
MIN_WORDS = 4
#: Most words of one sentence, whatever the shape allows: a longer one runs into the reply's
#: token cap and is cut without its end.
MAX_WORDS = 40


def prose_grammar(sentences: tuple[int, int], *, max_words: int = MAX_WORDS) -> str:
    """The grammar of plain prose of ``sentences`` (fewest, most) statements, each of
    ``MIN_WORDS`` to ``max_words`` words ending in . or !. No line breaks, headers, list items
    or angle brackets. Give ``max_words`` so that ``most * max_words`` words fit the reply's
    token cap, and the last sentence always has its end."""
    least, most = sentences
    words = max(MIN_WORDS, min(MAX_WORDS, max_words))
    rules = [
        f'root ::= stmt (" " stmt){{{least - 1},{most - 1}}}',
        *PIECES,
        f'words ::= first (" " word){{{MIN_WORDS - 1},{words - 1}}}',
        "stmt ::= words [.!]",
    ]
    return "\n".join(rules) + "\n"
