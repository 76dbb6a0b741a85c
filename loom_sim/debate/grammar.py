"""A message's shape as a grammar: what a model that can constrain its sampling writes by
construction instead of by regeneration.

The embedded model (llama.cpp) samples under a GBNF grammar when a request carries one, as it
already writes a judge's JSON from its schema. Every check of :class:`~loom_sim.debate.checks.Shape`
that is a shape goes into the grammar: how many sentences (each a capitalised run of words
ending in . ! or ?), whether the last must be a question or none may be, no list items, no
line breaks, a length that keeps within the reply's tokens, and — for a message that must name
something specific — a number or a capitalised name inside. What a grammar cannot say well (the
banned patterns, the persona's forbidden phrases, not opening by agreeing or refusing) is still
checked after, and a failing draft regenerated with its reasons. Providers that cannot take a
grammar ignore it: the checks are the same for every model.
"""

from __future__ import annotations

from loom_sim.debate.checks import Shape
from loom_sim.models.prose import MAX_WORDS, MIN_WORDS, PIECES, prose_grammar

__all__ = ["prose_grammar", "shape_grammar"]

#: Most words of a whole message: what fits the embedded model's reply cap (128 tokens), so the
#: last sentence is never cut without its end.
BUDGET_WORDS = 80


def shape_grammar(shape: Shape) -> str:
    """The GBNF grammar of messages of ``shape`` (llama.cpp's grammar syntax)."""
    least, most = shape.sentences
    per_sentence = max(MIN_WORDS, min(MAX_WORDS, shape.max_words // most, BUDGET_WORDS // most))
    more = per_sentence - 1  # words after the first
    asking = shape.question == "required"
    plain_end = "[.!]" if shape.question != "any" else "[.!?]"
    rules = [*PIECES, f'words ::= first (" " word){{{MIN_WORDS - 1},{more}}}']
    if shape.specific:
        # a number, or a capitalised name after the first word (what the check looks for)
        rules.append("named ::= num | [A-Z] [a-z]{2,15}")
        rules.append(
            f'specific ::= first (" " word){{0,{more // 2}}} " " named '
            f'(" " word){{{max(0, MIN_WORDS - 3)},{more // 2}}}'
        )
    statement = "specific" if shape.specific else "words"
    rules.append(f"stmt ::= words {plain_end}")
    if asking:
        rules.append('last ::= words "?"')
    else:
        rules.append(f"last ::= {statement} {plain_end}")
    if most == 1:
        root = "last"
    else:
        root = f'(stmt " "){{{least - 1},{most - 1}}} last'
    return "\n".join([f"root ::= {root}", *rules]) + "\n"
