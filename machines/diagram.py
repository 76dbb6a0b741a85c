"""A machine's diagram, drawn by ``transitions``' diagram support.

A ``GraphMachine`` is built from the spec's table for the drawing only: the machines that run
use the plain ``transitions.Machine`` (:mod:`loom_sim.machines.engine`), since a graph machine
redraws its graph on every move. Each edge is labelled with its trigger and, in brackets, what
the handler decided to take it ("rejected & retries left"); in mermaid, final states lead to
``[*]``; the initial state is the one drawn active.

Mermaid needs nothing more; Graphviz dot source comes through the ``graphviz`` Python package
(a dependency, which ``transitions`` draws with); an svg also needs Graphviz's ``dot`` program.
"""

from __future__ import annotations

import functools
import shutil
from typing import Any, Protocol

from loom_sim.errors import LoomError

__all__ = ["FORMATS", "draw"]

#: What :func:`draw` writes: the ``transitions`` graph engine each format is drawn with.
FORMATS = {"mermaid": "mermaid", "dot": "graphviz", "svg": "graphviz"}


class Drawable(Protocol):
    """What is drawn: a machine spec (:class:`loom_sim.machines.engine.MachineSpec`)."""

    @property
    def name(self) -> str: ...
    @property
    def states(self) -> tuple[str, ...]: ...
    @property
    def initial(self) -> str: ...
    @property
    def final(self) -> tuple[str, ...]: ...

    def rows(self) -> list[dict[str, Any]]: ...


class _Drawn:
    """The model the graph machine draws (its current state: the machine's initial one)."""

    state: str
    get_graph: Any


@functools.cache
def _drawer() -> type:
    """The graph machine that draws: transitions' hierarchical one (of flat states here), the
    one whose mermaid leads final states to ``[*]``, with a separator of nested names that no
    state name holds (its default, ``_``, would read ``start_chat`` as ``chat`` in ``start``)."""
    from transitions.extensions.diagrams import HierarchicalGraphMachine
    from transitions.extensions.nesting import NestedState

    class FlatState(NestedState):
        separator = "\u21a6"

    class Drawer(HierarchicalGraphMachine):
        state_cls = FlatState

    return Drawer


def draw(spec: Drawable, fmt: str = "mermaid") -> str:
    """``spec`` as mermaid ``stateDiagram-v2`` text, Graphviz dot source or svg."""
    engine = FORMATS.get(fmt)
    if engine is None:
        raise ValueError(f"unknown diagram format {fmt!r}; use {', '.join(FORMATS)}")
    if fmt == "svg" and shutil.which("dot") is None:
        raise LoomError(
            "--format svg needs Graphviz's dot program (e.g. apt-get install graphviz); "
            "--format mermaid needs nothing"
        )
    if engine == "graphviz":
        try:
            import graphviz  # noqa: F401  (what transitions draws dot with)
        except ImportError:
            raise LoomError(
                f"--format {fmt} needs the graphviz Python package "
                "(pip install graphviz); --format mermaid needs nothing"
            ) from None
    machine = _drawer()(
        model=None,
        states=[{"name": s, "final": s in spec.final} for s in spec.states],
        initial=spec.initial,
        transitions=spec.rows(),
        auto_transitions=False,
        graph_engine=engine,
        title=spec.name,
        show_conditions=False,  # the labels say what the handler decided
    )
    model = _Drawn()
    machine.add_model(model)
    graph = model.get_graph()
    if fmt == "mermaid":
        return str(graph.draw(None)).rstrip("\n") + "\n"
    if fmt == "dot":
        return str(graph.source)
    try:
        return bytes(graph.pipe(format="svg")).decode("utf-8")
    except Exception as exc:  # graphviz.ExecutableNotFound, CalledProcessError
        raise LoomError(f"Graphviz's dot could not draw the svg ({exc})") from None
