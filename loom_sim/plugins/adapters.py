"""Target adapters: how the harness reaches the program a simulated user drives.

An adapter kind is a name (``pty``, ``http``, ``model``...), the settings a scenario pack gives
it (a pydantic model, validated where the pack is loaded, so a typo in a target is reported at
its line), how ``--target KIND:ADDRESS`` becomes those settings, and how to open a connection::

    @adapter("pty", settings=PtySettings, shorthand=pty_shorthand, summary="...")
    def open_pty(settings: PtySettings, context: AdapterContext) -> TargetAdapter: ...

The pack's validation, its JSON Schema, ``--target`` and ``loom-sim plugins`` read
:data:`ADAPTERS`; a package adds a kind through the ``loom_sim.adapters`` entry points.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from loom_sim.plugins import Plugin, Registry
from loom_sim.plugins.outcomes import DEFAULT_FAILURE_PATTERN

__all__ = ["ADAPTERS", "AdapterKind", "TargetSettings", "adapter"]

#: The placeholders a target's settings may use; the session fills them in.
PLACEHOLDERS = {
    "python": "the Python running loom-sim (to start Python programs, the studio among them)",
    "workdir": "the target's own folder inside the session's bundle (its outputs, its events)",
    "bundle": "the session's bundle folder",
    "inputs": "the scenario's input files, as copied into the bundle, quoted and space-separated",
    "seed": "the session's seed",
}


def check_regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression ({exc})") from None
    return value


class TargetSettings(BaseModel):
    """What every target has, whatever reaches it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    #: The fields whose text may hold placeholders ({workdir}, {inputs}...); the rest (regular
    #: expressions, request templates) are taken as written.
    templated: ClassVar[tuple[str, ...]] = ("setup", "events", "artifacts")

    adapter: str = Field(description="The adapter kind: pty, http, model, or a plug-in's.")
    setup: list[str] = Field(
        default_factory=list,
        description="Lines sent once the target is live, before the first turn (importing "
        "the inputs), e.g. `/use {inputs}`.",
    )
    offers_abilities: bool = Field(
        True,
        description="Whether the target understands the pack's slash-command abilities; when "
        "false the simulated user only writes messages and no ability is credited. "
        "`--target KIND:ADDRESS` makes a target that offers none.",
    )
    failure_pattern: str | None = Field(
        DEFAULT_FAILURE_PATTERN,
        description="A regular expression: a reply matching it is a failed action. The "
        "default finds error lines (`Error: …`, `Parse error: …`, `Runtime error (…)`, "
        "`(standard_in) 5: syntax error`, `NameError: …`, `command not found`…); null: none.",
    )
    success_pattern: str | None = Field(
        None,
        description="A regular expression a reply that worked matches (what success looks "
        "like for this program); when given, a reply with output that does not match it is a "
        "failed action. Silence is judged by `on_silence`.",
    )
    on_silence: Literal["ok", "failed"] = Field(
        "ok",
        description="What a reply with no output means: `ok` (the statement worked and printed "
        "nothing, as `INSERT …;` in sqlite3 or `x = 1` in bc; recorded as no output) or "
        "`failed`.",
    )
    events: str | None = Field(
        None, description="An append-only JSON-lines event file the target writes, to tail."
    )
    artifacts: str | None = Field(
        None,
        description="A glob of the files the target produces (e.g. `{workdir}/out/*`); new "
        "images matching it are measured for the scorecard.",
    )
    reply_timeout_s: float = Field(
        120.0, gt=0, description="Longest wait for one reply; past it the action failed."
    )

    _check = field_validator("failure_pattern", "success_pattern")(
        classmethod(lambda cls, v: check_regex(v))
    )


S = TypeVar("S", bound=TargetSettings)


@dataclass(frozen=True, kw_only=True)
class AdapterKind(Plugin):
    settings: type[TargetSettings]
    open: Callable[[Any, Any], Any]  # (settings, AdapterContext) -> TargetAdapter
    shorthand: Callable[[str], dict[str, Any]]  # "ADDRESS" of --target KIND:ADDRESS -> settings


ADAPTERS: Registry[AdapterKind] = Registry("target adapter", "loom_sim.adapters")


def adapter(
    name: str,
    *,
    settings: type[S],
    shorthand: Callable[[str], dict[str, Any]],
    summary: str = "",
    order: int = 100,
) -> Callable[[Callable[[S, Any], Any]], Callable[[S, Any], Any]]:
    """Register the decorated ``open(settings, context)`` as adapter kind ``name``."""

    def register(open_: Callable[[S, Any], Any]) -> Callable[[S, Any], Any]:
        ADAPTERS.add(
            AdapterKind(
                name=name,
                settings=settings,
                open=open_,
                shorthand=shorthand,
                summary=summary,
                order=order,
            )
        )
        return open_

    return register
