"""A pack's ``targets``: each validated by its adapter kind's own settings model.

The kinds come from the adapter registry (:data:`loom_sim.plugins.adapters.ADAPTERS`), so the
pack's validation and its JSON Schema know a plug-in's adapter as well as the built-in ``pty``,
``http`` and ``model``. Placeholders (``{workdir}``, ``{inputs}``...) are checked here too, so
a misspelled one is an error at its line and not a command that fails at run time.
"""

from __future__ import annotations

import difflib
import posixpath
import string
from typing import Annotated, Any

from pydantic import BeforeValidator, SerializeAsAny, ValidationError, WithJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError

from loom_sim.plugins.adapters import ADAPTERS, PLACEHOLDERS, TargetSettings


def _error(loc: tuple[Any, ...], message: str, value: Any) -> InitErrorDetails:
    return InitErrorDetails(
        type=PydanticCustomError("value_error", "{message}", {"message": message}),
        loc=loc,
        input=value,
    )


def _by_adapter(data: Any) -> Any:
    """Each target's settings, validated by the model of the adapter it names."""
    if not isinstance(data, dict):
        return data  # pydantic reports the wrong type
    errors: list[InitErrorDetails] = []
    settings: dict[str, TargetSettings] = {}
    names = ADAPTERS.names()
    for name, value in data.items():
        if not isinstance(value, dict):
            errors.append(_error((name,), "a target is a mapping with an `adapter` key", value))
            continue
        kind = value.get("adapter")
        if kind not in ADAPTERS:
            close = difflib.get_close_matches(str(kind), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            said = "no adapter given" if kind is None else f"unknown adapter {kind!r}{hint}"
            errors.append(_error((name, "adapter"), f"{said}; adapters: {', '.join(names)}", kind))
            continue
        try:
            settings[name] = ADAPTERS.get(str(kind)).settings.model_validate(value)
        except ValidationError as err:
            errors += [
                InitErrorDetails(
                    type=PydanticCustomError("value_error", "{message}", {"message": e["msg"]}),
                    loc=(name, *e["loc"]),
                    input=e.get("input"),
                )
                for e in err.errors(include_url=False)
            ]
    if errors:
        raise ValidationError.from_exception_data("targets", errors)
    return settings


def _schema() -> dict[str, Any]:
    members = []
    for kind in ADAPTERS:
        sub = kind.settings.model_json_schema()
        sub["title"] = kind.name
        sub["description"] = kind.summary
        sub.setdefault("properties", {})["adapter"] = {"const": kind.name}
        sub["required"] = sorted({"adapter", *sub.get("required", [])})
        members.append(sub)
    return {
        "type": "object",
        "description": "Targets by name; each names its adapter kind and that kind's settings.",
        "additionalProperties": {"anyOf": members},
    }


TargetsField = Annotated[
    dict[str, SerializeAsAny[TargetSettings]],
    BeforeValidator(_by_adapter),
    WithJsonSchema({}),  # replaced by json_schema() in loom_sim.harness.packs.schema
]


def targets_schema() -> dict[str, Any]:
    return _schema()


def _placeholders(value: Any, loc: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    found: list[tuple[tuple[Any, ...], str]] = []
    if isinstance(value, str):
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(value) if f is not None]
        except ValueError as exc:
            message = f"cannot read the placeholders in {value!r} ({exc}); write {{{{ for a brace"
            return [(loc, message)]
        for field in fields:
            if field not in PLACEHOLDERS:
                listed = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                found.append((loc, f"unknown placeholder {{{field}}}; placeholders: {listed}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _placeholders(item, (*loc, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _placeholders(item, (*loc, key))
    return found


def check_targets(targets: dict[str, TargetSettings]) -> list[tuple[tuple[Any, ...], str]]:
    """Unknown placeholders in the settings that take them (a kind's ``templated`` fields)."""
    issues: list[tuple[tuple[Any, ...], str]] = []
    for name, settings in targets.items():
        for field in type(settings).templated:
            issues += _placeholders(getattr(settings, field), ("targets", name, field))
    return issues


#: The fields that name files a session reads: each must stay inside the session's bundle.
_FILE_FIELDS = ("events", "artifacts")
_BUNDLE = "/loom-sim-bundle"  # stands for the session's bundle while a pack is checked


def escaping_targets(targets: dict[str, TargetSettings]) -> list[tuple[tuple[Any, ...], str]]:
    """Event files and artifact globs that would be read from outside the session's bundle
    (``/etc/passwd``, ``{workdir}/../../..``): their lines and files become the bundle's.

    A relative path is the target's folder's (``{workdir}``); placeholders are filled with a
    stand-in bundle and the path normalised, so the check needs no run folder yet."""
    issues: list[tuple[tuple[Any, ...], str]] = []
    filled = {
        "python": "/python",
        "workdir": f"{_BUNDLE}/target",
        "bundle": _BUNDLE,
        "inputs": f"{_BUNDLE}/inputs/file",
        "seed": "0",
    }
    for name, settings in targets.items():
        for field in _FILE_FIELDS:
            value = getattr(settings, field, None)
            if not isinstance(value, str):
                continue
            try:
                path = value.format(**filled)
            except (KeyError, IndexError, ValueError):
                continue  # an unknown placeholder is reported by check_targets
            where = posixpath.normpath(posixpath.join(filled["workdir"], path))
            if where != _BUNDLE and not where.startswith(_BUNDLE + "/"):
                issues.append(
                    (
                        ("targets", name, field),
                        f"{value!r} leads outside the session's folder; write it under "
                        "{workdir} or {bundle}, or pass --allow-outside-paths to allow it",
                    )
                )
    return issues
