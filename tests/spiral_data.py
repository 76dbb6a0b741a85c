"""Where the Spiral-Bench data the tests read lives: ``../shared/data/spiral-bench`` beside the
checkout (its files carry no licence, so the repository holds none of them). A test that needs
it skips only when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPIRAL: Path | None = next(
    (p for p in (ROOT.parent / "shared" / "data" / "spiral-bench",) if p.is_dir()), None
)
needs_spiral = pytest.mark.skipif(SPIRAL is None, reason="no Spiral-Bench data in ../shared/data")


def result_files() -> list[Path]:
    """The Spiral-Bench result files, in a stable order."""
    return sorted((SPIRAL / "res_v0.2").glob("*.json")) if SPIRAL else []
