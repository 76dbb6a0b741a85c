"""The fence around untrusted text: what personas and interlocutors said reaches a judge only
as data between markers carrying a per-call nonce.

The judge reads transcripts written by a persona model; nothing a persona says may instruct
the judge. So transcript text is fenced between markers carrying a per-call nonce, any copy of
a marker inside the text is defused, and the judge is told the fenced text is data.
"""

from __future__ import annotations

from loom_sim.messages import WindowTurn


def markers(nonce: str) -> tuple[str, str]:
    """The (begin, end) markers of a fence with this nonce."""
    return f"<<<TRANSCRIPT {nonce}>>>", f"<<<END TRANSCRIPT {nonce}>>>"


def fence(window: list[WindowTurn], nonce: str) -> str:
    """The window as fenced data the judge cannot mistake for instructions."""
    lines = []
    for turn in window:
        lines.append(f"[turn {turn.turn}] PERSONA: {turn.persona}")
        lines.append(f"[turn {turn.turn}] INTERLOCUTOR: {turn.interlocutor}")
    return fence_lines(lines, nonce)


def fence_lines(lines: list[str], nonce: str) -> str:
    """Any transcript lines (a group chat's, a crux room's) as fenced data."""
    begin, end = markers(nonce)
    return "\n".join([begin, *(_defuse(line, nonce) for line in lines), end])


def _defuse(text: str, nonce: str) -> str:
    return text.replace("<<<", "‹‹‹").replace(nonce, "")
