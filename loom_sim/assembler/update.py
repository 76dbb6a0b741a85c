"""A full injection after the persona's first, as the persona receives it: what changed.

The persona's system prompt stays the one it read when its prompt was last read from the
start (its first turn, or the turn its history was last cut); a later full injection reaches
it as an update appended to the message it answers, and stays there in its history. Sending
the whole scaffolding again as a new system prompt would change the prompt's first tokens, so
a model with a prompt cache (llama.cpp's, the providers') would read all of it again: on the
embedded model that was most of a rollout's prompt reading. Updates near the end of the
conversation are also where a model attends most.

An update holds whole parts of the prompt, named by their heading (``PHASE``, ``RIGHT NOW``,
``WHERE THE CONVERSATION IS``…): each replaces the part with the same heading, and a part that
is gone is named as no longer in force. So the instructions a turn is judged against — the
prompt in force — are exactly what the persona's system prompt and the updates after it say::

    sections(apply_update(sections(old), prompt_update(old, new))) == sections(new)
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from loom_sim.assembler.prompt_builder import PromptBlocks
from loom_sim.assembler.rendering import render

BLOCKS = ("must_do", "how", "context")

# A part's heading: the capitals it starts with ("HOLD YOUR POSITION (resistance: high):" is
# HOLD YOUR POSITION); a part without one is named by its first line.
_HEADING = re.compile(r"[A-Z][A-Z ]*[A-Z]\b")

#: (block, heading) -> the part's text
Sections = dict[tuple[str, str], str]


def sections(blocks: PromptBlocks) -> Sections:
    """The prompt's parts (paragraphs), keyed by block and heading, in order."""
    out: Sections = {}
    for block in BLOCKS:
        for raw in getattr(blocks, block).split("\n\n"):
            part = raw.strip()
            if not part:
                continue
            first = part.splitlines()[0]
            found = _HEADING.match(first)
            heading = found.group(0).strip() if found else first
            key, n = (block, heading), 2
            while key in out:  # two parts under one heading: told apart by their order
                key, n = (block, f"{heading} ({n})"), n + 1
            out[key] = part
    return out


class PromptUpdate(msgspec.Struct, frozen=True):
    """The parts of a new prompt that are new or changed, and the headings of those gone."""

    parts: tuple[tuple[str, str, str], ...]  # (block, heading, text)
    dropped: tuple[tuple[str, str], ...] = ()  # (block, heading)

    def render(self) -> str:
        """The update as the persona reads it."""
        return render(
            "update",
            parts=[text for _, _, text in self.parts],
            dropped=[heading for _, heading in self.dropped],
        )


def prompt_update(old: PromptBlocks, new: PromptBlocks) -> PromptUpdate | None:
    """What the persona holding ``old`` must be told for ``new`` to be in force (None: the
    prompts say the same)."""
    before, after = sections(old), sections(new)
    parts = tuple((*key, text) for key, text in after.items() if before.get(key) != text)
    dropped = tuple(key for key in before if key not in after)
    if not parts and not dropped:
        return None
    return PromptUpdate(parts, dropped)


def update_text(held: PromptBlocks | None, new: PromptBlocks | None) -> str | None:
    """The update a persona holding ``held`` is sent when ``new`` is injected (None: nothing
    injected, or nothing held to update: ``new`` becomes its system prompt)."""
    if held is None or new is None:
        return None
    update = prompt_update(held, new)
    return update.render() if update is not None else None


def apply_update(held: Mapping[tuple[str, str], str], update: PromptUpdate) -> Sections:
    """The parts in force once ``update`` is read over ``held`` (what a test checks the
    persona was told against the prompt it is judged by)."""
    out = {key: text for key, text in held.items() if key not in update.dropped}
    for block, heading, text in update.parts:
        out[block, heading] = text
    return out
