"""Value types the config's sections share."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

SCHEMA_VERSIONS = ("0.1.0",)
"""Config formats this version of loom-sim reads."""

CURRENT_SCHEMA_VERSION = SCHEMA_VERSIONS[-1]

Intensity = Annotated[float, Field(ge=0.0, le=1.0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
