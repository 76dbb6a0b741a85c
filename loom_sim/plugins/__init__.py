"""Plug-in registries: every list in loom-sim is read from one of these, never written out again.

A plug-in registers itself where it is defined, with a decorator that adds an entry to its
kind's :class:`Registry`; the config's validation, the JSON Schema, ``--help``, the hub, the
scoring engine, the report and the docs' tables all iterate the registry. loom-sim's own
plug-ins and a third party's arrive the same way: through an ``importlib.metadata`` entry-point
group (``loom_sim.providers``, ``loom_sim.scorers``, ``loom_sim.monitors``, ``loom_sim.actors``,
``loom_sim.scripts``, ``loom_sim.harness_stops``...), loaded the first time a registry is read.
loom-sim declares its built-ins in its own ``pyproject.toml``; a separate package declares its
own in its ``pyproject.toml`` and nothing in loom-sim is edited. Code (a test, a notebook) may
also register directly.

An entry point names a module (or an object in one) whose import registers plug-ins; its name
is only a label, so one entry point may bring several.

A registry lives in the lowest layer that reads it: providers and scripted models with the
model layer (``loom_sim.models``), scorers and actor kinds here, below the config, which
validates ``evaluation.scoring`` and the responders against them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Generic, TypeVar

from loom_sim.errors import LoomError

__all__ = ["Plugin", "PluginError", "Registry", "UnknownPlugin", "load_entry_points"]


@dataclass(frozen=True, kw_only=True)
class Plugin:
    """What every registry entry has: a name, a line for people, a place in lists."""

    name: str
    summary: str = ""  # one line for --help and the docs' tables
    order: int = 100  # lists show entries by (order, name)


E = TypeVar("E", bound=Plugin)


class PluginError(LoomError):
    """A plug-in could not be loaded or registered; the message names it and its source."""


class UnknownPlugin(LoomError):
    """A name no plug-in of this kind has; the message lists the known ones."""


class Registry(Generic[E]):
    """The plug-ins of one kind, by name; filled from an entry-point group on first read."""

    #: ``kind/name`` of every entry registered for a ``with`` block (:meth:`added`), in any
    #: registry: they live in this process only, so work sent to another process (a worker
    #: of the ``processes`` executor) would not find them.
    temporary: set[str] = set()  # noqa: RUF012 - one set shared by every registry, on purpose

    def __init__(self, kind: str, group: str):
        self.kind = kind  # "provider", "scorer"... for messages
        self.group = group  # the entry-point group third parties declare
        self._entries: dict[str, E] = {}
        self._loaded = False
        self._loading = False

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"

    # ── registering ──

    def add(self, entry: E, *, replace: bool = False) -> E:
        """Register ``entry``; a second entry of the same name is an error unless ``replace``
        (two packages claiming one name must not silently shadow each other)."""
        previous = self._entries.get(entry.name)
        if previous is not None and previous is not entry and not replace:
            raise PluginError(f"two {self.kind}s are named {entry.name!r}; rename one of them")
        self._entries[entry.name] = entry
        return entry

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    @contextmanager
    def added(self, entry: E) -> Iterator[E]:
        """Register ``entry`` for the duration of a ``with`` block (tests, notebooks)."""
        self._load()
        self.add(entry)
        label = f"{self.kind}/{entry.name}"
        Registry.temporary.add(label)
        try:
            yield entry
        finally:
            Registry.temporary.discard(label)
            self.remove(entry.name)

    # ── reading ──

    def get(self, name: str) -> E:
        self._load()
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownPlugin(self.unknown(name))
        return entry

    def unknown(self, name: str) -> str:
        """The sentence for a name that is not here: what is, and the closest match."""
        names = self.names()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown {self.kind} {name!r}{hint}; known: {', '.join(names) or 'none'}"

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[E]:
        self._load()
        return iter(sorted(self._entries.values(), key=lambda e: (e.order, e.name)))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def names(self) -> list[str]:
        return [entry.name for entry in self]

    # ── loading ──

    def load(self) -> None:
        """Import every plug-in now, once: for a process that will read the registry from a
        busy event loop, where the imports would hold every task waiting behind them."""
        self._load()

    def _load(self) -> None:
        """Import every plug-in module declared in the entry-point group, once. Importing a
        module runs its decorators; reads during that (a plug-in asking the registry while it
        registers) see what is registered so far."""
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            for point in _entry_points(self.group):
                try:
                    point.load()
                except PluginError:
                    raise
                except Exception as err:
                    raise PluginError(
                        f"the {self.kind} plug-in {point.name!r} ({point.value}, entry point group "
                        f"{self.group}) failed to load: {type(err).__name__}: {err}"
                    ) from err
            self._loaded = True
        finally:
            self._loading = False


def load_entry_points(group: str, kind: str) -> None:
    """Import every module an entry-point group names (for plug-ins kept outside a
    :class:`Registry`, such as message types); a failure names the entry point."""
    for point in _entry_points(group):
        try:
            point.load()
        except PluginError:
            raise
        except Exception as err:
            raise PluginError(
                f"the {kind} plug-in {point.name!r} ({point.value}, entry point group {group}) "
                f"failed to load: {type(err).__name__}: {err}"
            ) from err


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    # loom-sim's own first, so a third party's plug-in with a clashing name is the one reported.
    points = list(metadata.entry_points(group=group))
    return sorted(points, key=lambda p: (p.dist is None or p.dist.name != "loom-sim", p.name))
