"""Why a system's unit of work ended: one shape for every system.

A rollout, a harness session (and any new system) stops for a reason that is a stable key
for scripts — a member of that system's own :class:`StopReason` — and a sentence for people.
Each system lists its reasons beside its machine; the shape of a stop, and the rule that its
key is written as its plain string value, are shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

__all__ = ["Stop", "StopReason"]


class StopReason(StrEnum):
    """The base of every system's stop reasons (subclass it with members; its values are
    what records and summaries hold)."""


R = TypeVar("R", bound=StopReason)


@dataclass(frozen=True)
class Stop(Generic[R]):
    """A unit of work's end: the reason's key and a sentence saying what happened."""

    reason: R
    detail: str
