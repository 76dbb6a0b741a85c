"""Target adapters: how a simulated user's lines reach a real program — a pseudo-terminal
(``pty``), an HTTP endpoint (``http``), a model (``model``) — and its replies come back.
Adapter kinds are registered (:data:`loom_sim.plugins.adapters.ADAPTERS`)."""

from loom_sim.harness.targets.base import (
    AdapterContext,
    Exchange,
    TargetAdapter,
    TargetFatal,
    open_target,
    target_from_option,
)

__all__ = [
    "AdapterContext",
    "Exchange",
    "TargetAdapter",
    "TargetFatal",
    "open_target",
    "target_from_option",
]
