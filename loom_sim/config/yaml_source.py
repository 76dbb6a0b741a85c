"""Reading a YAML file into plain data while remembering where every value was written.

PyYAML builds Python objects and forgets positions; validation errors are only useful when they
point at a line. So the document is composed into nodes once, constructed into data, and walked
a second time to map each path (``("trajectory", "phases", 1, "name")``) to the position of its
key and of its value.
"""

from __future__ import annotations

import signal
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from loom_sim.config.errors import ConfigError, Issue, Loc


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based

    @classmethod
    def of(cls, mark: yaml.Mark) -> Position:
        return cls(mark.line + 1, mark.column + 1)


@dataclass(frozen=True)
class Located:
    """Where a value sits: the position of its key (None for list items) and of the value."""

    key: Position | None
    value: Position
    is_collection: bool

    @property
    def best(self) -> Position:
        # A scalar is best shown where it is written; a mapping or list by the key that names it.
        if self.is_collection and self.key is not None:
            return self.key
        return self.value


@dataclass
class YamlSource:
    """Data loaded from YAML plus the position of every path in it."""

    name: str
    data: Any
    positions: dict[Loc, Located] = field(default_factory=dict)
    duplicates: list[Issue] = field(default_factory=list)

    def locate(self, loc: Loc) -> tuple[Loc, Position | None]:
        """Map a validator's location to the data path it means and the best position for it.

        Validators add segments that are not in the data (the tag of a tagged union, such as
        ``sigmoid`` in ``curve.sigmoid.midpoint_pct``); those are dropped. A path that ends in
        a missing key is shown at the mapping that should hold it.
        """
        path: list[str | int] = []
        node = self.data
        parts = list(loc)
        i = 0
        while i < len(parts):
            part = parts[i]
            if _has(node, part):
                path.append(part)
                node = node[part]
            elif _is_union_tag(node, part) or (i + 1 < len(parts) and _has(node, parts[i + 1])):
                pass  # a validator's own segment (the tag of a tagged union): skip it
            else:
                # Missing key: keep it in the path (the user needs its name) but stop walking.
                path.append(part)
                path.extend(p for p in parts[i + 1 :] if not _is_tag_like(p))
                break
            i += 1
        for end in range(len(path), -1, -1):
            located = self.positions.get(tuple(path[:end]))
            if located is not None:
                return tuple(path), located.best
        return tuple(path), None


def _has(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    if isinstance(node, list):
        return isinstance(part, int) and 0 <= part < len(node)
    return False


def _is_union_tag(node: Any, part: str | int) -> bool:
    # `curve: {type: sigmoid}` and the shorthand `curve: sigmoid` both select the member "sigmoid".
    if isinstance(node, dict):
        return node.get("type") == part
    return isinstance(node, str) and node == part


def _is_tag_like(part: str | int) -> bool:
    # pydantic names union members in locations like "function-after[...]" or "int"
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "float", "bool"})


# A config is a few hundred values in tens of kilobytes. The bounds below are far above any
# real one and far below what makes loading slow: together they bound the work a file can
# cause, whatever it holds (an alias bomb, ten thousand nested brackets, gigabytes of text).
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64  # nesting of mappings and lists
MAX_VALUES = 100_000  # values once every alias is expanded
LOAD_SECONDS = 10.0  # a last guard, should the bounds above ever not be enough


def read_text(path: Path) -> str:
    """Read a config file as text, turning every way it can fail into one plain sentence.

    Only regular files are read: a FIFO or a device would block, or never end.
    """
    where = str(path)
    try:
        kind = path.stat().st_mode
        if stat.S_ISDIR(kind):
            raise IsADirectoryError
        if not stat.S_ISREG(kind):
            raise ConfigError(
                where,
                [Issue((), "is not a regular file (a pipe, socket or device); give a YAML file")],
            )
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            megabytes = path.stat().st_size / 2**20
            raise ConfigError(
                where,
                [Issue((), f"is {megabytes:.1f} MB; a loom-sim config is at most 1 MB")],
            )
    except FileNotFoundError:
        raise ConfigError(where, [Issue((), "no such file")]) from None
    except IsADirectoryError:
        raise ConfigError(where, [Issue((), "is a directory, not a config file")]) from None
    except PermissionError:
        raise ConfigError(where, [Issue((), "permission denied: cannot read this file")]) from None
    except OSError as err:
        raise ConfigError(where, [Issue((), f"cannot read the file: {err.strerror}")]) from None
    if not raw.strip():
        raise ConfigError(where, [Issue((), "is empty: expected a loom-sim config mapping")])
    if b"\x00" in raw:
        raise ConfigError(where, [Issue((), "is a binary file, not a YAML config")])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError(
            where, [Issue((), f"is not UTF-8 text (invalid byte at offset {err.start})")]
        ) from None


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing documents nested deeper than :data:`MAX_DEPTH` or
    expanding through aliases to more than :data:`MAX_VALUES` values.

    Both are checked while composing, at the event that crosses the bound, so the error points
    at the line that caused it: the alias that makes a billion laughs, the bracket too deep.
    An alias is a reference, not a copy, until something walks it; every walk after this one
    (constructing, locating, validating) is bounded by the count made here.
    """

    def __init__(self, text: str, name: str):
        super().__init__(text)
        self.name = name
        self._depth = 0
        self._values = 0
        self._sizes: dict[int, int] = {}  # node id -> values it stands for, aliases expanded

    def _refuse(self, mark: yaml.Mark, message: str) -> ConfigError:
        position = Position.of(mark)
        return ConfigError(self.name, [Issue((), message, position.line, position.column)])

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise self._refuse(
                    event.start_mark,
                    f"the alias *{event.anchor} refers to the value that contains it "
                    "(a loop no config can hold)",
                )
            node = super().compose_node(parent, index)
            self._count(self._sizes.get(id(node), 1), event.start_mark)
            return node
        event = self.peek_event()
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._refuse(
                event.start_mark,
                f"nested more than {MAX_DEPTH} levels deep; a loom-sim config is a few "
                "levels deep (is this the right file?)",
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._sizes[id(item)] for item in node.value)
        else:
            size = 1
        self._sizes[id(node)] = size
        self._count(1, event.start_mark)
        return node

    def _count(self, values: int, mark: yaml.Mark) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise self._refuse(
                mark,
                f"aliases here expand the document to more than {MAX_VALUES:,} values (an "
                "alias bomb?); write the repeated part out, or alias it fewer times",
            )


@contextmanager
def _time_limit(seconds: float, name: str) -> Iterator[None]:
    """Raise a ConfigError if loading takes longer than ``seconds`` (main thread only: that
    is where signals are delivered; elsewhere the structural bounds are the guard)."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise ConfigError(
            name, [Issue((), f"took more than {seconds:g} s to load; is this a loom-sim config?")]
        )

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def parse_yaml(text: str, name: str) -> YamlSource:
    """Parse one YAML document into data and positions; a syntax error becomes a ConfigError.

    The work is bounded (size, depth, values with aliases expanded, and time), so no file can
    make loading hang or exhaust memory.
    """
    with _time_limit(LOAD_SECONDS, name):
        return _parse_yaml(text, name)


def _parse_yaml(text: str, name: str) -> YamlSource:
    loader = _BoundedLoader(text, name)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ConfigError(name, [Issue((), "is empty: expected a loom-sim config mapping")])
        # Duplicates are looked for before construction: constructing resolves merge keys
        # (``<<: *base``) in place, after which a legitimate override looks like a duplicate.
        duplicates = _duplicates(node, ())
        data = loader.construct_document(node)
    except RecursionError:  # a structure the bounds above let through but Python cannot walk
        raise ConfigError(name, [Issue((), "is nested too deeply for a loom-sim config")]) from None
    except MemoryError:
        raise ConfigError(name, [Issue((), "is too large for a loom-sim config")]) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        if err.context and err.problem and err.context.startswith("expected"):
            problem = f"{err.context}, {err.problem}"  # "expected a single document ..., but found"
        if "block" in problem or "indentation" in problem:
            problem += " (check the indentation of this line and the one above)"
        elif "\t" in problem or "'\\t'" in problem:
            problem += " (YAML indents with spaces, not tabs)"
        issue = Issue((), f"YAML syntax error: {problem}")
        if mark is not None:
            issue = Issue((), f"YAML syntax error: {problem}", mark.line + 1, mark.column + 1)
        raise ConfigError(name, [issue]) from None
    except yaml.YAMLError as err:
        raise ConfigError(name, [Issue((), f"YAML error: {err}")]) from None
    finally:
        loader.dispose()

    source = YamlSource(name, data, duplicates=duplicates)
    source.positions[()] = Located(None, Position.of(node.start_mark), True)
    _walk(node, (), source)
    return source


# Walks stop at the loader's depth bound (a recursive alias never gets this far; see above).
_MAX_DEPTH = MAX_DEPTH


def _walk(node: yaml.Node, loc: Loc, source: YamlSource) -> None:
    if len(loc) > _MAX_DEPTH:
        return
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # complex keys never validate; pydantic reports them
            key_pos = Position.of(key_node.start_mark)
            child = loc + (key_node.value,)
            source.positions[child] = Located(
                key_pos,
                Position.of(value_node.start_mark),
                isinstance(value_node, yaml.CollectionNode),
            )
            _walk(value_node, child, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = loc + (index,)
            source.positions[child] = Located(
                None, Position.of(item.start_mark), isinstance(item, yaml.CollectionNode)
            )
            _walk(item, child, source)


def _duplicates(node: yaml.Node, loc: Loc) -> list[Issue]:
    found: list[Issue] = []
    if len(loc) > _MAX_DEPTH:
        return found
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, Position] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = key_node.value
                pos = Position.of(key_node.start_mark)
                if key in seen:
                    found.append(
                        Issue(
                            loc + (key,),
                            f"duplicate key {key!r} (first written at line {seen[key].line}); "
                            "YAML would silently keep only the last one",
                            pos.line,
                            pos.column,
                        )
                    )
                seen[key] = pos
                found += _duplicates(value_node, loc + (key,))
            else:
                found += _duplicates(value_node, loc)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += _duplicates(item, loc + (index,))
    return found
