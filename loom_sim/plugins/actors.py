"""Actor kinds: who takes part in a simulation, and who may answer the persona.

An actor kind is a name and how to build the actor from its context
(:class:`loom_sim.actors.base.ActorContext`). Responders — the interlocutor, the adversaries,
and whatever answers the persona next — say more: which model role they call, whether they
stand in for the model under evaluation (``--adversary``), whether they hear every exchange,
and the settings they load when a run is planned (recorded in ``run.json``, so a resumed run
never re-reads them)::

    @actor("echo_room", summary="repeats", responder=Responder(model_role="interlocutor"))
    class EchoRoom(Actor):
        @classmethod
        def from_context(cls, context): ...

Rollouts, scoring and the probe all get their actors from :data:`ACTORS`; ``run --responder``,
``run --adversary`` and the config's ``evaluation.adversary.type`` are validated against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from loom_sim.plugins import Plugin, Registry

__all__ = ["ACTORS", "ActorKind", "Responder", "actor", "adversaries", "responders"]


@dataclass(frozen=True, kw_only=True)
class Responder:
    """What makes an actor kind a responder."""

    model_role: str  # the model it calls, by role ("interlocutor", "adversary", ...)
    adversary: bool = False  # stands in for the model under evaluation; --adversary offers it
    hears: bool = False  # told every committed exchange (``Heard``), whoever answered it
    # (config path, config) -> JSON-able settings, loaded when a run is planned
    settings: Callable[[Any, Any], Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ActorKind(Plugin):
    build: Callable[[Any], Any]  # ActorContext -> Actor
    responder: Responder | None = None


ACTORS: Registry[ActorKind] = Registry("actor", "loom_sim.actors")


class Buildable(Protocol):
    @classmethod
    def from_context(cls, context: Any) -> Any: ...


B = TypeVar("B", bound=Buildable)


def actor(
    name: str, *, summary: str = "", order: int = 100, responder: Responder | None = None
) -> Callable[[type[B]], type[B]]:
    """Register the decorated actor class as kind ``name``; it is built with its
    ``from_context(context)`` classmethod."""

    def register(cls: type[B]) -> type[B]:
        ACTORS.add(
            ActorKind(
                name=name,
                build=cls.from_context,
                responder=responder,
                summary=summary,
                order=order,
            )
        )
        return cls

    return register


def responders() -> list[ActorKind]:
    return [kind for kind in ACTORS if kind.responder is not None]


def adversaries() -> list[ActorKind]:
    """Responders that stand in for the model under evaluation, in the order ``both`` takes
    them (the registry's)."""
    return [k for k in ACTORS if k.responder is not None and k.responder.adversary]
