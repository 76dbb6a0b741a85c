"""The machine engine: a table checked once per spec, fired by lookup, a bad trigger raised."""

from __future__ import annotations

from enum import StrEnum

import pytest
import transitions
from loom_sim.machines.engine import (
    MACHINES,
    Machine,
    MachineError,
    MachineSpec,
    drive,
    transition,
)


class Go(StrEnum):
    NEXT = "next"
    STOP = "stop"


class Other(StrEnum):
    NEXT = "next"


def spec(*rows, states=("a", "b", "end"), initial="a") -> MachineSpec:
    return MachineSpec(
        name="toy",
        triggers=Go,
        states=states,
        initial=initial,
        final=("end",),
        table=rows or (transition(Go.NEXT, "a", "b"), transition(Go.STOP, ("a", "b"), "end")),
    )


def test_the_table_is_checked_once_per_spec():
    toy = spec()
    first, second = Machine(toy), Machine(toy)
    assert first._dest is second._dest  # one checked table, shared
    assert first.fire(Go.NEXT) == "b" and second.state == "a"  # each machine its own state
    assert first.fire(Go.STOP) == "end" and first.done


@pytest.mark.parametrize(
    ("rows", "states", "initial", "message"),
    [
        ((transition(Go.NEXT, "a", "nowhere"),), ("a", "end"), "a", "'nowhere' not among"),
        ((transition(Go.NEXT, "zz", "end"),), ("a", "end"), "a", "'zz' not among"),
        ((transition(Go.NEXT, "a", "end"),), ("a", "end"), "c", "'c' not among"),
        ((transition(Go.NEXT, "a", "b"),), ("a", "b", "end"), "a", "no way out of 'b'"),
        ((transition(Other.NEXT, "a", "end"),), ("a", "end"), "a", "not one of its triggers"),
        (
            (transition(Go.NEXT, "a", "end"), transition(Go.NEXT, "a", "a")),
            ("a", "end"),
            "a",
            "two rows for 'next' from 'a'",
        ),
    ],
    ids=["unknown-dest", "unknown-source", "unknown-initial", "stuck", "foreign", "ambiguous"],
)
def test_an_unsound_table_fails_when_its_first_machine_is_made(rows, states, initial, message):
    with pytest.raises(MachineError, match=message):
        Machine(spec(*rows, states=states, initial=initial))


def test_every_registered_machine_is_sound():
    for machine_spec in MACHINES:
        assert Machine(machine_spec).state == machine_spec.initial


def test_a_trigger_the_table_does_not_allow_is_raised_and_leaves_the_state():
    machine = Machine(spec(), initial="b")
    with pytest.raises(MachineError, match="'next' is not a way out of 'b'"):
        machine.fire(Go.NEXT)
    assert machine.state == "b"


def test_an_unknown_starting_state_is_raised():
    with pytest.raises(MachineError, match="no state 'c'"):
        Machine(spec(), initial="c")


async def test_drive_fires_what_each_handler_returns():
    machine = Machine(spec())
    seen = []

    async def at_a() -> Go:
        return Go.NEXT

    async def at_b() -> Go:
        return Go.STOP

    await drive(machine, {"a": at_a, "b": at_b}, lambda *step: seen.append(step))
    assert seen == [("a", Go.NEXT, "b"), ("b", Go.STOP, "end")]


def test_the_state_is_the_transitions_models():
    """transitions holds and moves the state: one library machine per spec, each machine a
    model of it, which leaves the library's list when it ends."""
    import transitions

    toy = spec()
    machine = Machine(toy)
    library = machine._library
    assert isinstance(library, transitions.Machine) and library is Machine(toy)._library
    assert machine.model in library.models
    assert library.get_model_state(machine.model).name == machine.state == "a"
    machine.fire(Go.NEXT)
    assert machine.model.state == library.get_model_state(machine.model).name == "b"
    assert machine.fire(Go.STOP) == "end"
    assert machine.model not in library.models  # a final state: forgotten


def test_the_library_is_strict():
    machine = Machine(spec())
    assert not hasattr(machine.model, "to_end")  # no auto transitions
    library = machine._library
    with pytest.raises(transitions.MachineError):
        library.events["next"].trigger(Machine(spec(), initial="b").model)


def test_a_machine_dropped_midway_leaves_the_librarys_list():
    import gc

    toy = spec()
    library = Machine(toy)._library
    before = len(library.models)
    machine = Machine(toy)
    assert len(library.models) == before + 1
    del machine
    gc.collect()
    assert len(library.models) == before


def test_every_move_is_read_back_from_the_librarys_machine():
    """Where a trigger leads comes from the transitions machine's own events, and for every
    registered machine that is exactly its declared table."""
    from loom_sim.machines.engine import MACHINES, _built

    for name in MACHINES.names():
        machine_spec = MACHINES.get(name)
        library = _built(machine_spec).library
        from_library = {
            (source, trigger): moves[0].dest
            for trigger, event in library.events.items()
            for source, moves in event.transitions.items()
        }
        declared = {(s, t.trigger.value): t.dest for t in machine_spec.table for s in t.source}
        assert _built(machine_spec).dest == from_library == declared, name
