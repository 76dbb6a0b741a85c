"""Machines as tables, and the one loop that drives them.

A machine is declared as data — its states, its triggers (a ``StrEnum``) and a table of
transitions — and driven by handlers, one per active state, that do that state's work and
*return* the trigger that leaves it. The loop fires it. Nothing reads the state back to learn
what a handler decided: the handler's return value is the decision, and the table only says
where each decision leads (a trigger the table does not allow from that state is a bug, raised
at once). A new machine is a new table and its handlers; the loop, the table's check (once
per table), diagram export and the registry (``loom-sim diagram``) are shared.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

from loom_sim.errors import LoomError
from loom_sim.plugins import Plugin, Registry

T = TypeVar("T", bound=StrEnum)


class MachineError(LoomError):
    """A handler returned a trigger its state does not allow: a bug in that handler."""


@dataclass(frozen=True)
class Transition(Generic[T]):
    trigger: T
    source: tuple[str, ...]
    dest: str
    when: str = ""  # what the handler decided, for the diagram ("rejected, retries left")


def transition(
    trigger: T, source: str | tuple[str, ...], dest: str, when: str = ""
) -> Transition[T]:
    """One row of a machine's table: ``source`` one state or several. Every machine's table is
    written with this, so a row reads the same in all of them."""
    return Transition(trigger, (source,) if isinstance(source, str) else source, dest, when)


@dataclass(frozen=True, kw_only=True)
class MachineSpec(Plugin, Generic[T]):
    """A machine as data: registered in :data:`MACHINES` so ``loom-sim diagram`` finds it."""

    triggers: type[T]
    states: tuple[str, ...]
    initial: str
    final: tuple[str, ...]
    table: tuple[Transition[T], ...]
    descriptions: dict[str, str] = field(default_factory=dict)  # state -> what happens there

    @property
    def active(self) -> tuple[str, ...]:
        return tuple(s for s in self.states if s not in self.final)

    def edges(self) -> list[tuple[str, str, str]]:
        """(source, destination, label) per edge of the table."""
        return [
            (source, t.dest, t.trigger.value + (f" [{t.when}]" if t.when else ""))
            for t in self.table
            for source in t.source
        ]

    def diagram(self, fmt: str = "mermaid") -> str:
        """The machine as mermaid ``stateDiagram-v2`` text or Graphviz dot source."""
        if fmt == "mermaid":
            lines = ["stateDiagram-v2", f"    [*] --> {self.initial}"]
            lines += [f"    {src} --> {dst}: {label}" for src, dst, label in self.edges()]
            lines += [f"    {state} --> [*]" for state in self.final]
            return "\n".join(lines) + "\n"
        if fmt == "dot":
            lines = [f"digraph {self.name} {{", "    rankdir=LR;"]
            lines.append("    node [shape=box, style=rounded];")
            lines += [f"    {state} [peripheries=2];" for state in self.final]
            lines += [f'    {src} -> {dst} [label="{label}"];' for src, dst, label in self.edges()]
            return "\n".join(lines) + "\n}\n"
        raise ValueError(f"unknown diagram format {fmt!r}; use mermaid or dot")


#: Every machine, for ``loom-sim diagram`` (the ``loom_sim.machines`` entry points add more).
MACHINES: Registry[MachineSpec] = Registry("machine", "loom_sim.machines")


#: Each machine spec's table, checked the first time a machine of it is made: (source,
#: trigger) -> destination. Keyed by the spec's id, the spec kept alive with it.
_CHECKED: dict[int, tuple[MachineSpec, dict[tuple[str, str], str]]] = {}


def _checked_table(spec: MachineSpec) -> dict[tuple[str, str], str]:
    """``spec``'s table as a lookup, once it is known sound: every state it names is declared,
    every active state has a way out, every trigger is one of its own, and no trigger leads
    two ways from one state. Checked once per spec, when its first machine is made."""
    known = _CHECKED.get(id(spec))
    if known is not None:
        return known[1]

    def bad(what: str) -> MachineError:
        return MachineError(f"{spec.name} machine: {what}")

    named = {spec.initial, *spec.final} | {s for t in spec.table for s in (*t.source, t.dest)}
    unknown = sorted(named - set(spec.states))
    if unknown:
        raise bad(f"{', '.join(map(repr, unknown))} not among its states")
    stuck = [s for s in spec.active if not any(s in t.source for t in spec.table)]
    if stuck:
        raise bad(f"no way out of {', '.join(map(repr, stuck))}")
    table: dict[tuple[str, str], str] = {}
    for row in spec.table:
        if not isinstance(row.trigger, spec.triggers):
            raise bad(f"{row.trigger!r} is not one of its triggers ({spec.triggers.__name__})")
        for source in row.source:
            if (source, row.trigger.value) in table:
                raise bad(f"two rows for {row.trigger.value!r} from {source!r}")
            table[(source, row.trigger.value)] = row.dest
    _CHECKED[id(spec)] = (spec, table)
    return table


class Machine(Generic[T]):
    """A machine's state, moved by one method, :meth:`fire`, along its spec's table.

    Firing is a lookup in the table, checked once per spec. The machines use no conditions
    or callbacks, so a state machine library's event machinery would add only its cost
    (measured with ``transitions``: ~35 us a fire, ~0.3 ms to build a machine, 256 of them
    at the start of a 256-rollout run) and checks none of :func:`_checked_table`'s.
    """

    def __init__(self, spec: MachineSpec[T], initial: str | None = None):
        self.spec = spec
        self._dest = _checked_table(spec)
        self._state = initial or spec.initial
        if self._state not in spec.states:
            raise MachineError(f"{spec.name} machine: no state {self._state!r} to start in")

    @property
    def state(self) -> str:
        return self._state

    @property
    def done(self) -> bool:
        return self.state in self.spec.final

    def fire(self, trigger: T) -> str:
        """Take the transition ``trigger`` names from the current state; the new state."""
        before = self._state
        dest = self._dest.get((before, trigger.value))
        if dest is None:
            raise MachineError(
                f"{self.spec.name} machine: {trigger.value!r} is not a way out of {before!r}"
            )
        self._state = dest
        return dest


Handler = Callable[[], Awaitable[T]]


async def drive(
    machine: Machine[T],
    handlers: Mapping[str, Handler[T]],
    on_transition: Callable[[str, T, str], None] | None = None,
) -> None:
    """Run ``machine`` to a final state: each state's handler works and returns its trigger;
    the loop fires it. A handler that raises leaves the machine where it was: its owner
    decides what that means (usually firing its failure trigger)."""
    missing = [s for s in machine.spec.active if s not in handlers]
    if missing:
        raise MachineError(f"{machine.spec.name} machine: no handler for {', '.join(missing)}")
    while not machine.done:
        before = machine.state
        trigger = await handlers[before]()
        after = machine.fire(trigger)
        if on_transition is not None:
            on_transition(before, trigger, after)
