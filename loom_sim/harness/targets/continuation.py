"""Continuation prompts: a program left waiting for the rest of a statement.

Why: a line that is not a whole statement (``INSERT INTO t VALUES (1`` without its ``;``)
leaves sqlite3 at ``   ...> ``; every later line is appended to it, and a harness that waits
for the main prompt sees only a timeout, then a run of baffling errors. The adapter notices the
prompt (:data:`DEFAULT_CONTINUATION`, measured on a labelled set of prompts and near-misses in
``tests/data/validity/harness_continuation.jsonl``), ends the reply there, and records it.
"""

from __future__ import annotations

from loom_sim.harness.targets.base import Exchange

#: A line that is only a continuation prompt: sqlite3's `   ...> `, Python's and node's `... `
#: (auto-indented: `...     `), IPython's `   ...: `, psql's `db-> `, `db'> `, `db(> `, `db-# `
#: and in a transaction `db-*> `, `db-!# `, mysql's `    -> `, `    '> `, R's `+ `, ghci's
#: `ghci| `, irb's `irb(main):002:1* `, duckdb's `‣ `. Prompts end in a space; a line of output
#: (`Loading...`, `a -> b`) does not match. The main prompt is checked first.
DEFAULT_CONTINUATION = (
    r"^[ \t]*(?:\.\.\.[>:]?[ ]+|(?:\w*[-'\"(`$*][*!]?[>#]|->|/\*>|\+|\w+\||‣"
    r"|irb\([^)]*\):\d+:\d+[*\"'`]) )$"
)

#: What a program's continuation prompt is where no other program's could be mistaken for it,
#: by the program's name: a shell's `> ` (PS2) is node's main prompt, so it is a continuation
#: only for a shell; the perl debugger's `  cont: `; gdb's ` >` in a command block.
PROGRAM_CONTINUATION = {
    **dict.fromkeys(("bash", "sh", "dash", "zsh", "ksh", "mksh", "ash"), r"^> $"),
    "perl": r"^[ \t]*cont: $",
    "gdb": r"^[ \t]*>$",
}


def continuation_for(program: str) -> str:
    """The default continuation pattern for ``program`` (a path or a name): the general one,
    and the program's own where :data:`PROGRAM_CONTINUATION` knows it."""
    name = program.replace("\\", "/").rsplit("/", 1)[-1]
    own = PROGRAM_CONTINUATION.get(name)
    return f"(?:{DEFAULT_CONTINUATION})|(?:{own})" if own else DEFAULT_CONTINUATION


def after_reset(reply: Exchange, after: Exchange, reset: str) -> Exchange:
    """The reply of a line that stopped at a continuation prompt, joined with the answer to the
    line the pack says gets the program out of it; a note records both."""
    note = {"type": "continuation", "prompt": reply.continuation, "reset": reset}
    return Exchange(
        text="\n".join(t for t in (reply.text, after.text) if t),
        ended_by=after.ended_by,
        duration_s=round(reply.duration_s + after.duration_s, 3),
        truncated=reply.truncated or after.truncated,
        received_bytes=reply.received_bytes + after.received_bytes,
        screen=after.screen,
        notes=[note],
        continuation=reply.continuation,
    )
