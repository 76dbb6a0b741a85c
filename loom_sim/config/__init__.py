"""The config: schema (pydantic models), cross-field rules, and a loader that locates errors."""

from loom_sim.config.errors import ConfigError, Issue
from loom_sim.config.loader import load_config, load_document, parse_config, parse_document
from loom_sim.config.spec import CURRENT_SCHEMA_VERSION, SCHEMA_VERSIONS, LoomConfig

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "ConfigError",
    "Issue",
    "LoomConfig",
    "load_config",
    "load_document",
    "parse_config",
    "parse_document",
]
