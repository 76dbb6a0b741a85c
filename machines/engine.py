"""Machines as tables, and the one loop that drives them.

A machine is declared as data — its states, its triggers (a ``StrEnum``) and a table of
transitions — and driven by handlers, one per active state, that do that state's work and
*return* the trigger that leaves it. The loop fires it. Nothing reads the state back to learn
what a handler decided: the handler's return value is the decision, and the table only says
where each decision leads (a trigger the table does not allow from that state is a bug, raised
at once). A new machine is a new table and its handlers; the loop, the table's check (once
per table), diagram export and the registry (``loom-sim diagram``) are shared.

The `transitions <https://github.com/pytransitions/transitions>`_ library holds and moves
every machine's state: each spec builds one ``transitions.Machine`` from its table, the first
time a machine of it is made, and each machine is a model added to it (its ``state`` is the
library's). Strict: no ``to_<state>`` shortcuts, and a trigger its state does not allow
raises. Where a trigger leads is read back from the library's own events, once per spec, and a
fire moves the model with the library's ``set_state``: the library's event machinery (a queue,
an event object, callback lists, debug logging) cost ~6 us a fire and 10 % of a rollout's
framework time with monitors off, and loom-sim's machines use none of it (handlers return
their trigger; nothing hangs on a transition). The library does not check a table's soundness
— a state nobody leaves, a trigger of another machine, two rows for one trigger — so the
engine checks that itself, once per spec. Diagrams come from the library's own diagram
support.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

import transitions

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

    def rows(self) -> list[dict[str, Any]]:
        """The table as ``transitions`` reads it: one dict per row, the edge's label (the
        trigger, and what the handler decided) beside it for the diagrams."""
        return [
            {
                "trigger": t.trigger.value,
                "source": list(t.source),
                "dest": t.dest,
                "label": t.trigger.value + (f" [{t.when}]" if t.when else ""),
            }
            for t in self.table
        ]

    def diagram(self, fmt: str = "mermaid") -> str:
        """The machine drawn by ``transitions``' diagram support: mermaid ``stateDiagram-v2``
        text (needs nothing more), or Graphviz dot source (needs the ``graphviz`` package)."""
        from loom_sim.machines.diagram import draw

        return draw(self, fmt)


#: Every machine, for ``loom-sim diagram`` (the ``loom_sim.machines`` entry points add more).
MACHINES: Registry[MachineSpec] = Registry("machine", "loom_sim.machines")


class _Built:
    """What a spec's machines share: its checked table's ``transitions.Machine``, and where
    each trigger leads from each state, as that machine has it."""

    __slots__ = ("dest", "library", "spec")

    def __init__(self, spec: MachineSpec):
        self.spec = spec  # kept alive with its entry: the cache is keyed by its id
        self.library = transitions.Machine(
            model=None,  # models are added per machine
            states=[{"name": s, "final": s in spec.final} for s in spec.states],
            initial=spec.initial,
            transitions=[{k: v for k, v in row.items() if k != "label"} for row in spec.rows()],
            auto_transitions=False,  # no to_<state>: every move is a row of the table
            ignore_invalid_triggers=False,  # a trigger its state does not allow raises
            name=spec.name,
        )
        # (state, trigger) -> destination, from the library's events: a move the library's
        # machine does not hold cannot be made.
        self.dest: dict[tuple[str, str], str] = {
            (source, trigger): moves[0].dest
            for trigger, event in self.library.events.items()
            for source, moves in event.transitions.items()
            if moves[0].dest is not None  # the library's internal transitions: none here
        }


def _forget(library: transitions.Machine, model: Any) -> None:
    """A machine's model leaves the library's list of models (which would otherwise hold every
    rollout's machine for the life of the process)."""
    if model in library.models:
        library.remove_model(model)


#: Each machine spec's table, checked, and its transitions machine, made the first time a
#: machine of it is made. Keyed by the spec's id, the spec kept alive with it.
_BUILT: dict[int, _Built] = {}


def _built(spec: MachineSpec) -> _Built:
    """``spec``'s shared parts, once its table is known sound: every state it names is
    declared, every active state has a way out, every trigger is one of its own, and no trigger
    leads two ways from one state. Checked once per spec, when its first machine is made."""
    known = _BUILT.get(id(spec))
    if known is not None:
        return known

    def bad(what: str) -> MachineError:
        return MachineError(f"{spec.name} machine: {what}")

    named = {spec.initial, *spec.final} | {s for t in spec.table for s in (*t.source, t.dest)}
    unknown = sorted(named - set(spec.states))
    if unknown:
        raise bad(f"{', '.join(map(repr, unknown))} not among its states")
    stuck = [s for s in spec.active if not any(s in t.source for t in spec.table)]
    if stuck:
        raise bad(f"no way out of {', '.join(map(repr, stuck))}")
    seen: set[tuple[str, str]] = set()
    for row in spec.table:
        if not isinstance(row.trigger, spec.triggers):
            raise bad(f"{row.trigger!r} is not one of its triggers ({spec.triggers.__name__})")
        for source in row.source:
            if (source, row.trigger.value) in seen:
                raise bad(f"two rows for {row.trigger.value!r} from {source!r}")
            seen.add((source, row.trigger.value))
    built = _BUILT[id(spec)] = _Built(spec)
    return built


class _Model:
    """What a ``transitions.Machine`` moves: the library keeps the state in its ``state``
    attribute, and binds its trigger methods to it."""

    state: str


class Machine(Generic[T]):
    """A machine's state, moved by one method, :meth:`fire`, along its spec's table.

    The state is the ``transitions`` model's. Built once per spec, the library's machine costs
    each machine only adding its model (~60 us) and each fire ~1 us
    (``benchmarks/bench_rollout_overhead.py``).
    """

    def __init__(self, spec: MachineSpec[T], initial: str | None = None):
        self.spec = spec
        built = _built(spec)
        self._dest = built.dest
        self._library = built.library
        start = initial or spec.initial
        if start not in spec.states:
            raise MachineError(f"{spec.name} machine: no state {start!r} to start in")
        self.model = _Model()
        self._library.add_model(self.model, initial=start)
        # A machine dropped before a final state (a cancelled rollout) leaves the list too.
        weakref.finalize(self, _forget, self._library, self.model)

    @property
    def state(self) -> str:
        return self.model.state

    @property
    def done(self) -> bool:
        return self.state in self.spec.final

    def fire(self, trigger: T) -> str:
        """Take the transition ``trigger`` names from the current state; the new state."""
        before = self.model.state
        dest = self._dest.get((before, trigger.value))
        if dest is None:
            raise MachineError(
                f"{self.spec.name} machine: {trigger.value!r} is not a way out of {before!r}"
            )
        self._library.set_state(dest, self.model)
        if dest in self.spec.final:
            _forget(self._library, self.model)
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
