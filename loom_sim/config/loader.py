"""Loading a config file: text -> YAML -> validated ``LoomConfig``, or every problem, located.

All problems are collected before anything is raised: the YAML's duplicate keys, pydantic's
field errors, and the cross-field rules (run on every section that did validate). Each becomes
an :class:`Issue` with ``file:line:column`` and a field path.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from loom_sim.config.errors import ConfigError, Issue, Loc
from loom_sim.config.rules import Sections, check, check_sections
from loom_sim.config.spec import (
    CURVE_SETTINGS,
    InteractionSpec,
    LoomConfig,
    SafetySpec,
    TrajectorySpec,
)
from loom_sim.config.yaml_source import YamlSource, parse_yaml, read_text


def load_config(path: str | Path) -> LoomConfig:
    """Load and validate a config file; raise :class:`ConfigError` listing every problem."""
    path = Path(path)
    return parse_config(read_text(path), str(path))


def parse_config(text: str, source: str = "<config>") -> LoomConfig:
    """Validate config text; ``source`` names it in error messages."""
    src = parse_yaml(text, source)
    if not isinstance(src.data, dict):
        found = type(src.data).__name__ if src.data is not None else "nothing"
        found = {"list": "a list", "str": "a plain string", "NoneType": "nothing"}.get(found, found)
        raise ConfigError(
            source,
            [
                Issue(
                    (),
                    f"the top level must be a mapping of sections (schema_version, persona, "
                    f"trajectory, ...), found {found}",
                    1,
                    1,
                )
            ],
        )

    issues = list(src.duplicates)
    config: LoomConfig | None = None
    try:
        config = LoomConfig.model_validate(src.data, context={"defer_rules": True})
    except ValidationError as err:
        issues += [_issue_from_pydantic(e, src) for e in err.errors(include_url=False)]

    if config is not None:
        rule_issues = check(config)
    else:
        rule_issues = check_sections(_valid_sections(src.data))
    issues += [_place(issue, src) for issue in rule_issues]

    if issues:
        raise ConfigError(source, _dedupe(issues))
    assert config is not None
    return config


M = typing.TypeVar("M", bound=BaseModel)


def load_document(
    path: str | Path, model: type[M], what: str, context: dict[str, Any] | None = None
) -> M:
    """Load a YAML file validated by ``model`` (an adversary or probe config); raise
    :class:`ConfigError` with every problem located as ``file:line:col``. ``what`` names the
    kind of file in the top-level message ("an adversary config"); ``context`` reaches the
    model's validators (a scenario pack's or a deck's folder, to check the files it names)."""
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".json":
        text = json_as_yaml(text, str(path))
    return parse_document(text, str(path), model, what, context)


def json_as_yaml(text: str, source: str) -> str:
    """A JSON file's text, ready for the YAML reader that locates every value.

    JSON is YAML, with two differences handled here: a JSON syntax error is reported with
    JSON's own words and position, and tabs — whitespace to JSON, forbidden as indentation in
    YAML — are read as spaces (a valid JSON file has tabs only between tokens, so positions
    stay where they were). A file nested deeper than Python's JSON reader can follow passes
    on to the YAML reader, whose depth bound names the line.
    """
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            source, [Issue((), f"JSON syntax error: {exc.msg}", exc.lineno, exc.colno)]
        ) from None
    except RecursionError:
        pass
    return text.replace("\t", " ")


def parse_document(
    text: str, source: str, model: type[M], what: str, context: dict[str, Any] | None = None
) -> M:
    src = parse_yaml(text, source)
    if not isinstance(src.data, dict):
        raise ConfigError(source, [Issue((), f"{what} must be a mapping at the top level", 1, 1)])
    issues = list(src.duplicates)
    try:
        document = model.model_validate(src.data, context=context)
    except ValidationError as err:
        issues += [_issue_from_pydantic(e, src, model) for e in err.errors(include_url=False)]
    if issues:
        raise ConfigError(source, _dedupe(issues))
    return document


def field_errors(model: str, issues: list[tuple[Loc, str]]) -> ValidationError:
    """Cross-field problems found in a model validator, as one pydantic error per field: the
    loader then places each at its own ``file:line:col`` instead of all at the model's start.
    Raise it from the validator: ``raise field_errors(type(self).__name__, issues)``."""
    return ValidationError.from_exception_data(
        model,
        [
            InitErrorDetails(
                type=PydanticCustomError("value_error", "{message}", {"message": message}),
                loc=loc,
                input=None,
            )
            for loc, message in issues
        ],
    )


def _valid_sections(data: dict[str, Any]) -> Sections:
    """Validate the sections the rules need one by one, keeping those that pass."""

    def section(name: str, model: type[BaseModel], default: bool) -> Any:
        if name not in data:
            return model() if default else None
        try:
            return model.model_validate(data[name])
        except ValidationError:
            return None  # its own errors are already reported

    return Sections(
        trajectory=section("trajectory", TrajectorySpec, default=False),
        safety=section("safety", SafetySpec, default=True),
        interaction=section("interaction", InteractionSpec, default=True),
    )


def _place(issue: Issue, src: YamlSource) -> Issue:
    path, pos = src.locate(_beside_curve(issue.loc, src.data))
    if pos is None:
        return Issue(path, issue.message)
    return Issue(path, issue.message, pos.line, pos.column)


def _dedupe(issues: list[Issue]) -> list[Issue]:
    seen: set[tuple] = set()
    out = []
    for issue in issues:
        key = (issue.loc, issue.message)
        if key not in seen:
            seen.add(key)
            out.append(issue)
    return out


# ─── pydantic errors, in words for people ───────────────────────────────────


def _issue_from_pydantic(
    error: ErrorDetails | dict[str, Any], src: YamlSource, root: type[BaseModel] = LoomConfig
) -> Issue:
    loc: Loc = tuple(error["loc"])
    kind = error["type"]
    message = error["msg"]
    value = error.get("input")

    if kind == "extra_forbidden":
        key = loc[-1]
        message = f"unknown key {key!r}" + _suggest(loc, src, root)
    elif kind == "missing":
        message = "missing required field"
    elif kind == "union_tag_invalid":
        tag = error.get("ctx", {}).get("tag")
        expected = error.get("ctx", {}).get("expected_tags", "")
        options = [t.strip().strip("'") for t in str(expected).split(",")]
        close = difflib.get_close_matches(str(tag), options, n=1)
        message = f"unknown type {tag!r}; expected one of {expected}"
        if close:
            message += f" (did you mean {close[0]!r}?)"
        loc = loc + ("type",)
    elif kind == "union_tag_not_found":
        message = "missing `type` (e.g. type: linear)"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        message = f"must be a mapping (indented `key: value` lines), got {_shown(value)}"
    elif kind == "too_short":
        least = error.get("ctx", {}).get("min_length", 1)
        message = f"must have at least {least} item{'s' if least != 1 else ''}"
    elif kind == "list_type":
        message = f"must be a list (lines starting with `- `), got {_shown(value)}"
    elif kind in ("value_error", "assertion_error"):
        message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    else:
        message = message[0].lower() + message[1:] if message else kind
        message = message.replace("input should be", "must be")
        if isinstance(value, bool):  # YAML 1.1: yes/no/on/off are booleans too
            message += (
                f", got {str(value).lower()}, a boolean (YAML reads yes, no, on and off as "
                "booleans)"
            )
        elif isinstance(value, (str, int, float)):
            message += f", got {_shown(value)}"
            if isinstance(value, str) and kind in ("int_type", "float_type", "bool_type"):
                if _looks_plain(value):
                    message += " (a quoted string; write it without quotes)"
        if kind in ("literal_error", "enum") and isinstance(value, str):
            expected = str(error.get("ctx", {}).get("expected", ""))
            options = [t.strip().strip("'") for t in expected.replace(" or ", ",").split(",")]
            close = difflib.get_close_matches(value, options, n=1)
            if close:
                message += f" (did you mean {close[0]!r}?)"
    return _place(Issue(loc, message), src)


def _looks_plain(text: str) -> bool:
    """Whether quoted ``text`` would be a number or a boolean without its quotes."""
    if text.strip().lower() in ("true", "false"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _suggest(loc: Loc, src: YamlSource, root: type[BaseModel]) -> str:
    """A hint for an unknown key: a close sibling name, or where that field really belongs."""
    key = str(loc[-1])
    parent_model = _model_at(root, loc[:-1], src.data)
    if parent_model is None:
        return ""
    siblings = list(parent_model.model_fields)
    close = difflib.get_close_matches(key, siblings, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    homes = sorted(_homes_of(key, root, "", set()))
    if homes:
        return f"; {key!r} belongs under {' or '.join(homes)}"
    return "; known keys here: " + ", ".join(siblings)


def _model_at(model: type[BaseModel], loc: Loc, data: Any) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``loc`` (through dicts, lists, unions)."""
    current: Any = model
    node = data
    for part in loc:
        current = _unwrap(current, node)
        origin = typing.get_origin(current)
        if origin is list:
            current = typing.get_args(current)[0]
            node = (
                node[part]
                if isinstance(node, list) and isinstance(part, int) and part < len(node)
                else None
            )
        elif origin is dict:
            current = typing.get_args(current)[1]
            node = node.get(part) if isinstance(node, dict) else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                continue  # a union tag segment such as "sigmoid"
            current = field.annotation
            node = node.get(part) if isinstance(node, dict) else None
        else:
            return None
    current = _unwrap(current, node)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any, node: Any) -> Any:
    """Strip Optional and Annotated; pick the union member that ``node`` selects by its type."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            tag = node.get("type") if isinstance(node, dict) else None
            annotation = next(
                (
                    m
                    for m in members
                    if isinstance(m, type)
                    and issubclass(m, BaseModel)
                    and "type" in m.model_fields
                    and tag in typing.get_args(m.model_fields["type"].annotation)
                ),
                members[0],
            )
        else:
            return annotation


def _homes_of(key: str, annotation: Any, path: str, seen: set) -> set[str]:
    """Schema paths (``trajectory.dimensions.<name>.curve``) of every mapping with field ``key``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated or origin in (typing.Union, types.UnionType):
        return set().union(*(_homes_of(key, a, path, seen) for a in typing.get_args(annotation)))
    if origin is list:
        return _homes_of(key, typing.get_args(annotation)[0], path + "[]", seen)
    if origin is dict:
        return _homes_of(key, typing.get_args(annotation)[1], path + ".<name>", seen)
    if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return set()
    if (annotation, path) in seen:
        return set()
    seen.add((annotation, path))
    homes = {path or "the top level"} if key in annotation.model_fields else set()
    for name, field in annotation.model_fields.items():
        homes |= _homes_of(key, field.annotation, f"{path}.{name}" if path else name, seen)
    return homes


def _beside_curve(loc: Loc, data: Any) -> Loc:
    """A curve setting written beside ``curve`` (the plan's form, moved under it when
    validated) is reported where it was written: ``<dim>.curve.<tag>.midpoint_pct`` ->
    ``<dim>.midpoint_pct``."""
    if "curve" not in loc:
        return loc
    at = loc.index("curve")
    dimension: Any = data
    for part in loc[:at]:
        if isinstance(dimension, dict) and part in dimension:
            dimension = dimension[part]
        elif isinstance(dimension, list) and isinstance(part, int) and part < len(dimension):
            dimension = dimension[part]
        else:
            return loc
    if not isinstance(dimension, dict):
        return loc
    settings = {k for keys in CURVE_SETTINGS.values() for k in keys}
    for part in loc[at + 1 :]:
        if part in settings and part in dimension:
            rest = loc[loc.index(part) + 1 :]
            return (*loc[:at], part, *rest)
    return loc
