"""Config sections keyed by a plug-in registry: ``evaluation.scoring``, ``interaction.monitors``.

Each registered scorer or monitor owns a section of its kind's mapping, validated against its
own settings model. The keys come from the registry, so a package's plug-in is configured like
loom-sim's own, and a misspelled key is an error at its line naming the close match.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = ["Section", "error", "registered_settings", "section_properties", "validate_sections"]


class Section(BaseModel):
    """Base of every config model: immutable, unknown keys are errors, and types are strict.

    Strict, because YAML 1.1 reads `yes`, `on` and `off` as booleans and pydantic's lax mode
    would then take `expected_turns: yes` for 1: a boolean where a number belongs, a number
    where a flag belongs, or a quoted number, is an error at its line. Enum fields opt out
    (``strict=False``): they are written as their values.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


SettingsOf = Callable[[Any], type[BaseModel]]


def validate_sections(
    data: Mapping[Any, Any],
    by_key: Mapping[str, Any],
    settings_of: SettingsOf,
    *,
    noun: str,
    skip: Iterable[str] = (),
) -> tuple[dict[str, BaseModel], list[InitErrorDetails]]:
    """Every registered entry's settings (its section of ``data``, or its defaults), and the
    errors: an unknown key (with the close match), or a section its settings refuse (at the
    section's own location)."""
    skipped = set(skip)
    settings: dict[str, BaseModel] = {}
    errors: list[InitErrorDetails] = []
    for key, value in data.items():
        if key in skipped:
            continue
        info = by_key.get(key)
        if info is None:
            close = difflib.get_close_matches(str(key), list(by_key), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(by_key) or "none registered"
            errors.append(error((key,), f"unknown {noun} {key!r}{hint}; {noun}s: {known}", value))
            continue
        try:
            settings[key] = settings_of(info).model_validate({} if value is None else value)
        except ValidationError as err:
            errors += [
                InitErrorDetails(
                    type=PydanticCustomError(e["type"], e["msg"]),
                    loc=(key, *e["loc"]),
                    input=e.get("input"),
                )
                for e in err.errors(include_url=False)
            ]
    found = {key: settings.get(key) or settings_of(info)() for key, info in by_key.items()}
    return found, errors


def registered_settings(
    given: Mapping[str, BaseModel] | None,
    entries: Iterable[Any],
    config_key: str,
    settings_of: SettingsOf,
    default: type[BaseModel],
) -> Any:
    """One entry's settings: as the config gave them, else its settings' defaults (an entry
    registered after the config was validated), else ``default`` (no entry has that key)."""
    if given and config_key in given:
        return given[config_key]
    info = next((i for i in entries if i.config_key == config_key), None)
    return settings_of(info)() if info is not None else default()


def section_properties(entries: Iterable[Any], settings_of: SettingsOf) -> dict[str, Any]:
    """The JSON Schema of each registered entry's section, by its config key, described by
    the entry's summary."""
    properties: dict[str, Any] = {}
    for info in entries:
        sub = settings_of(info).model_json_schema()
        sub.pop("title", None)
        sub["description"] = info.summary or sub.get("description", "")
        properties[info.config_key] = sub
    return properties


def error(loc: tuple[Any, ...], message: str, value: Any) -> InitErrorDetails:
    return InitErrorDetails(
        type=PydanticCustomError("value_error", "{message}", {"message": message}),
        loc=loc,
        input=value,
    )
