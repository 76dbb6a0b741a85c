"""Reading a YAML file into plain data while remembering where every value was written.

PyYAML builds Python objects and forgets positions; validation errors are only useful when they
point at a line. So the document is composed into nodes once, constructed into data, and walked
a second time to map each path (``("trajectory", "phases", 1, "name")``) to the position of its
key and of its value.
"""

from __future__ import annotations

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


def read_text(path: Path) -> str:
    """Read a config file as text, turning every way it can fail into one plain sentence."""
    where = str(path)
    try:
        raw = path.read_bytes()
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


def parse_yaml(text: str, name: str) -> YamlSource:
    """Parse one YAML document into data and positions; a syntax error becomes a ConfigError."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ConfigError(name, [Issue((), "is empty: expected a loom-sim config mapping")])
        # Duplicates are looked for before construction: constructing resolves merge keys
        # (``<<: *base``) in place, after which a legitimate override looks like a duplicate.
        duplicates = _duplicates(node, ())
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
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


# Deeper than any real config; stops a self-referencing alias (``&a [*a]``) from recursing forever.
_MAX_DEPTH = 64


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
