"""The config field reference in Markdown, generated from the models.

``docs/config.md`` embeds this between markers; a test fails when the two disagree, so the
reference cannot fall behind the schema. Regenerate with ``scripts/gen-docs``.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from loom_sim.config.monitors import MonitorSettings, MonitorsSpec
from loom_sim.config.spec import LoomConfig, ScorerSettings, ScoringSpec

BEGIN = "<!-- BEGIN GENERATED REFERENCE (scripts/gen-docs) -->"
END = "<!-- END GENERATED REFERENCE -->"


def markdown() -> str:
    """One table per mapping in the schema, in the order a config is written."""
    sections: list[str] = []
    _collect(LoomConfig, "", sections, set())
    return "\n\n".join(sections)


def _collect(model: type[BaseModel], path: str, out: list[str], seen: set) -> None:
    if (model, path) in seen:
        return
    seen.add((model, path))
    if model is ScoringSpec:
        _scoring(path, out, seen)
        return
    if model is MonitorsSpec:
        _monitors(path, out, seen)
        return
    title = path or "top level"
    lines = [f"### `{title}`" if path else "### Top level"]
    doc = (model.__doc__ or "").strip()
    if doc and not doc.startswith("Base of every"):
        lines += ["", " ".join(doc.split())]
    lines += ["", "| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    children: list[tuple[type[BaseModel], str]] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        meaning = (field.description or "").replace("|", "\\|")
        kind = _type(annotation) + _range(field)
        lines.append(f"| `{name}` | {kind} | {_default(field)} | {meaning} |")
        for child, suffix in _nested(annotation):
            children.append((child, f"{path}.{name}{suffix}" if path else f"{name}{suffix}"))
    out.append("\n".join(lines))
    for child, child_path in children:
        _collect(child, child_path, out, seen)


def _nested(annotation: Any, suffix: str = "") -> list[tuple[type[BaseModel], str]]:
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, suffix)]
    if origin is list:
        return _nested(typing.get_args(annotation)[0], suffix + "[]")
    if origin is dict:
        return _nested(typing.get_args(annotation)[1], suffix + ".<name>")
    if origin is typing.Annotated:
        return _nested(typing.get_args(annotation)[0], suffix)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        tagged = [
            m
            for m in members
            if isinstance(m, type) and issubclass(m, BaseModel) and "type" in m.model_fields
        ]
        if len(tagged) > 1:
            # A tagged union: one table per member, named by its tag.
            return [
                (m, f"{suffix} (type: {typing.get_args(m.model_fields['type'].annotation)[0]})")
                for m in tagged
            ]
        return [n for m in members for n in _nested(m, suffix)]
    return []


def _range(field: Any) -> str:
    """Numeric bounds declared on a field or its annotated type, e.g. `` in [0, 1]``."""
    bounds: dict[str, Any] = {}
    metadata = list(field.metadata)
    annotation = field.annotation
    for arg in typing.get_args(annotation) or ():
        if typing.get_origin(arg) is typing.Annotated:
            for inner in typing.get_args(arg)[1:]:
                metadata += getattr(inner, "metadata", [inner])
    for item in metadata:
        for attr in ("ge", "gt", "le", "lt"):
            if getattr(item, attr, None) is not None:
                bounds[attr] = getattr(item, attr)
    if not bounds:
        return ""
    low = f"[{bounds['ge']}" if "ge" in bounds else f"({bounds['gt']}" if "gt" in bounds else None
    high = f"{bounds['le']}]" if "le" in bounds else f"{bounds['lt']})" if "lt" in bounds else None
    if low and high:
        return f" in {low}, {high}"
    if low:
        return f" ≥ {low[1:]}" if low[0] == "[" else f" > {low[1:]}"
    if high:
        return f" ≤ {high[:-1]}" if high[-1] == "]" else f" < {high[:-1]}"
    return ""


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(members) < len(typing.get_args(annotation))
        if len(members) > 1 and all(_type(m) == "mapping" for m in members):
            text = "mapping (by `type`)"
        else:
            text = " or ".join(_type(m) for m in members)
        return f"{text} (optional)" if optional else text
    if origin is list:
        return f"list of {_type(typing.get_args(annotation)[0])}"
    if origin is dict:
        return f"mapping of name → {_type(typing.get_args(annotation)[1])}"
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
        if isinstance(value, BaseModel):
            return "see below"
        return "`[]`" if value == [] else "`{}`" if value == {} else f"`{value!r}`"
    value = field.default
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str) and len(value) > 40:
        return "(text, see example)"
    return f"`{value}`" if not isinstance(value, str) else f'`"{value}"`'


def _scoring(path: str, out: list[str], seen: set) -> None:
    """``evaluation.scoring``: one key per registered scorer (the registry is the list), then
    a table per kind of settings."""
    from loom_sim.plugins.scorers import SCORERS

    doc = " ".join((ScoringSpec.__doc__ or "").split())
    lines = [f"### `{path}`", "", doc, "", "| key | scorer | scores | judge | meaning |"]
    lines.append("| --- | --- | --- | --- | --- |")
    target = " ".join((ScoringSpec.model_fields["target"].description or "").split())
    lines.append("| `target` | – | – | – | " + target.replace("|", "\\|") + " |")
    settings: dict[type[BaseModel], list[str]] = {}
    for info in SCORERS:
        judged = "yes" if info.needs_judge else "no"
        who = "the model under evaluation" if info.subject == "target" else "the persona"
        summary = info.summary.replace("|", "\\|")
        lines.append(f"| `{info.config_key}` | {info.name} | {who} | {judged} | {summary} |")
        settings.setdefault(info.settings or ScorerSettings, []).append(info.config_key)
    out.append("\n".join(lines))
    for model, keys in settings.items():
        shown = keys[0] if len(keys) == 1 else "<scorer>"
        _collect(model, f"{path}.{shown}", out, seen)


def _monitors(path: str, out: list[str], seen: set) -> None:
    """``interaction.monitors``: one key per registered monitor, then its settings; with none
    registered, what every section holds."""
    from loom_sim.plugins.monitors import MONITORS

    doc = " ".join((MonitorsSpec.__doc__ or "").split())
    lines = [f"### `{path}`", "", doc]
    elsewhere = [info for info in MONITORS if info.section is not None]
    if elsewhere:
        lines += [
            "",
            "loom-sim's own monitors keep their settings where configs have always had them: "
            + ", ".join(f"{info.name} in `{info.config_key}`" for info in elsewhere)
            + ".",
        ]
    entries = [info for info in MONITORS if info.section is None]
    if entries:
        lines += ["", "| key | monitor | meaning |", "| --- | --- | --- |"]
        for info in entries:
            summary = info.summary.replace("|", "\\|")
            lines.append(f"| `{info.config_key}` | {info.name} | {summary} |")
    out.append("\n".join(lines))
    shown: list[tuple[type[BaseModel], str]] = [
        (info.settings or MonitorSettings, info.config_key) for info in entries
    ]
    for model, key in shown or [(MonitorSettings, "<monitor>")]:
        _collect(model, f"{path}.{key}", out, seen)
