"""``interaction.monitors``: the settings of every registered rollout monitor, by its key.

A monitor registered with :func:`loom_sim.plugins.monitors.monitor` owns a section here, read
by its ``settings`` model (a subclass of :class:`MonitorSettings`). A section left out takes
its defaults: a registered monitor runs unless its section says ``enabled: false``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, SerializeAsAny, ValidationError, model_validator

from loom_sim.config.sections import (
    Section,
    registered_settings,
    section_properties,
    validate_sections,
)

__all__ = ["MonitorSettings", "MonitorsSpec"]


class MonitorSettings(Section):
    """A monitor's section of ``interaction.monitors``: every monitor has these."""

    enabled: bool = Field(True, description="Run this monitor on every persona draft.")


def settings_of(info: Any) -> type[MonitorSettings]:
    settings = info.settings or MonitorSettings
    if not (isinstance(settings, type) and issubclass(settings, MonitorSettings)):
        raise TypeError(f"monitor {info.name!r}: its settings must subclass MonitorSettings")
    return settings


def _own(monitors: Any) -> list[Any]:
    """The monitors whose settings are sections here (not those kept elsewhere, ``section``)."""
    return [info for info in monitors if info.section is None]


def _schema(schema: dict[str, Any], handler: Any) -> None:
    # The JSON Schema lists the registered monitors, each with its own settings' schema.
    from loom_sim.plugins.monitors import MONITORS

    schema.clear()
    schema.update(
        {
            "type": "object",
            "description": "Further monitors of the persona's drafts, by name (see "
            "docs/architecture.md); each has its own settings.",
            "properties": section_properties(_own(MONITORS), settings_of),
            "additionalProperties": False,
        }
    )


class MonitorsSpec(Section):
    """Every registered monitor's settings, by its config key (absent: the defaults).

    The keys and their settings come from the monitor registry, so a monitor a package adds is
    configured here like loom-sim's own, and a misspelled key is an error at its line.
    """

    model_config = ConfigDict(
        extra="allow", frozen=True, json_schema_extra=_schema, title="MonitorsSpec"
    )
    __pydantic_extra__: dict[str, SerializeAsAny[MonitorSettings]]

    @model_validator(mode="before")
    @classmethod
    def _by_registry(cls, data: Any) -> Any:
        from loom_sim.plugins.monitors import MONITORS

        if data is None:
            data = {}
        if not isinstance(data, dict):
            return data  # pydantic reports the wrong type
        by_key = {info.config_key: info for info in _own(MONITORS)}
        found, errors = validate_sections(data, by_key, settings_of, noun="monitor")
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return found

    def of(self, config_key: str) -> MonitorSettings:
        """A monitor's settings (the defaults when the monitor was registered after this
        config was validated)."""
        from loom_sim.plugins.monitors import MONITORS

        return registered_settings(
            self.__pydantic_extra__, MONITORS, config_key, settings_of, MonitorSettings
        )
