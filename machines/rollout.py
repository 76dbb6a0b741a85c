"""The rollout machine: one conversation, turn by turn, as a table.

    init -> plan -> act -> observe -> monitor -> score -> (plan ... | done)      error from any

The machine only says which step comes next; the async work of each state happens in the
rollout runner (``loom_sim.runtime.rollout``) between triggers. Leaving ``act`` is guarded by
the repetition monitor's verdict: a rejected candidate loops ``act -> act`` with a re-prompt
while retries are left, so a rejected draft never reaches the interlocutor.
"""

from __future__ import annotations

from typing import Any, Protocol

from transitions import Machine

STATES = ["init", "plan", "act", "observe", "monitor", "score", "done", "error"]
ACTIVE = ["init", "plan", "act", "observe", "monitor", "score"]

# trigger, source(s), destination, guard conditions (methods of the model)
TABLE: list[tuple[str, str | list[str], str, list[str]]] = [
    ("start", "init", "plan", []),
    ("prompt_ready", "plan", "act", []),
    ("candidate", "act", "act", ["rejected", "retries_left"]),  # re-prompt: vary your output
    ("candidate", "act", "observe", []),  # accepted, or out of retries
    ("exchanged", "observe", "monitor", []),
    ("observed", "monitor", "score", []),
    ("next_turn", "score", "plan", []),
    ("finish", ["score", "init"], "done", []),  # from init: a resumed rollout already complete
    ("turn_failed", ["act", "observe"], "score", []),  # unusable reply: counted, turn retried
    ("fail", ACTIVE, "error", []),
]


class RolloutModel(Protocol):
    """What the machine's guards ask of the object it drives."""

    def rejected(self) -> bool: ...

    def retries_left(self) -> bool: ...


def transitions_table() -> list[dict[str, Any]]:
    return [
        {"trigger": trigger, "source": source, "dest": dest, "conditions": conditions}
        for trigger, source, dest, conditions in TABLE
    ]


def attach(model: RolloutModel, initial: str = "init") -> Machine:
    """Give ``model`` a ``state`` and one method per trigger."""
    return Machine(
        model=model,
        states=STATES,
        transitions=transitions_table(),
        initial=initial,
        auto_transitions=False,
        ignore_invalid_triggers=False,
    )


def _edges() -> list[tuple[str, str, str]]:
    edges = []
    for trigger, sources, dest, conditions in TABLE:
        label = trigger + (f" [{' & '.join(conditions)}]" if conditions else "")
        for source in [sources] if isinstance(sources, str) else sources:
            edges.append((source, dest, label))
    return edges


def diagram(fmt: str = "mermaid") -> str:
    """The machine as mermaid ``stateDiagram-v2`` text or Graphviz dot source, from the table."""
    if fmt == "mermaid":
        lines = ["stateDiagram-v2", "    [*] --> init"]
        lines += [f"    {src} --> {dst}: {label}" for src, dst, label in _edges()]
        lines += ["    done --> [*]", "    error --> [*]"]
        return "\n".join(lines) + "\n"
    if fmt == "dot":
        lines = ["digraph rollout {", "    rankdir=LR;", "    node [shape=box, style=rounded];"]
        lines += ["    done [peripheries=2];", "    error [peripheries=2, color=red];"]
        lines += [f'    {src} -> {dst} [label="{label}"];' for src, dst, label in _edges()]
        return "\n".join(lines) + "\n}\n"
    raise ValueError(f"unknown diagram format {fmt!r}; use mermaid or dot")
