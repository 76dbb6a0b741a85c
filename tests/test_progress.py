"""Progress reporting: plain lines for pipes and CI, a live table on terminals."""

from __future__ import annotations

import io

from rich.console import Console

from loom_sim.runtime.progress import PlainProgress, RichProgress


def test_plain_progress_writes_one_line_per_event():
    stream = io.StringIO()
    progress = PlainProgress(stream)
    progress.rollout_started("rollout_000", 12, 0)
    progress.turn_done("rollout_000", 0, "rapport", 1234, 0.0123, 4.5)
    progress.turn_done("rollout_000", 1, "rapport", 2000, None, 6.0)
    progress.rollout_ended("rollout_000", "done", "12 of 12 turns")
    lines = stream.getvalue().splitlines()
    assert lines == [
        "rollout_000: started (12 turns)",
        "rollout_000: turn 1/12 · rapport · 1234 tokens · $0.0123 · 4.5s",
        "rollout_000: turn 2/12 · rapport · 2000 tokens · unknown · 6.0s",
        "rollout_000: done (12 of 12 turns)",
    ]


def test_plain_progress_says_where_a_resumed_rollout_continues():
    stream = io.StringIO()
    PlainProgress(stream).rollout_started("rollout_001", 10, 4)
    assert stream.getvalue().strip() == "rollout_001: started (10 turns, resuming after turn 3)"


def test_rich_progress_renders_a_row_per_rollout():
    progress = RichProgress()
    progress.rollout_started("rollout_000", 12, 0)
    progress.rollout_started("rollout_001", 12, 0)
    progress.turn_done("rollout_000", 2, "disclosure", 900, 0.5, 3.0)
    progress.rollout_ended("rollout_001", "error", "openai/x: 5 attempts failed")
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(progress)
    text = console.file.getvalue()
    assert "rollout_000" in text and "3/12" in text and "disclosure" in text and "$0.5000" in text
    assert "error: openai/x: 5 attempts failed" in text
