#!/usr/bin/env python3
"""Port psychosis-bench-2.0 (dynamic mania bench) profiles to loom-sim configs.

    python scripts/port_mania_bench.py PROFILE.yaml... --schedule standard --output DIR

This script is `loom-sim port psychosis-bench` with the same
arguments, so both share one implementation (loom_sim.rollout.interop.port) and one error boundary.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loom_sim.cli import cli  # noqa: E402


def main(argv: list[str]) -> None:
    cli.main(["port", "psychosis-bench", *argv], prog_name="loom-sim")


if __name__ == "__main__":
    main(sys.argv[1:])
