"""Fitting a judge's window into its model's context.

A judge's window is the last few turns, and a turn is whatever the two sides said: an imported
transcript of a frontier model holds replies of a thousand tokens, and six of them do not fit
the embedded model's 4,096. Failing the call would fail every turn after it the same way, so the
window is fitted instead, the way a persona's history is: the oldest turns are left out first
(the newest, the one being judged, always stays); if that one turn alone is still too long, the
middle of its longer message is left out, its start and end kept, with a marker saying so. What
was left out is said in the judgement (``Judgement.fitted``), so a score never hides that its
judge read less than the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loom_sim.messages import WindowTurn

#: Tokens kept free beside the reply for the chat template's role markers and separators.
TEMPLATE_SLACK = 48
MARKER = "\n[… {n} characters left out here to fit the judge's context …]\n"


def fit_window(
    window: Sequence[WindowTurn],
    tokens_of: Callable[[Sequence[WindowTurn]], int],
    budget: int,
) -> tuple[list[WindowTurn], str | None]:
    """The longest suffix of ``window`` whose prompt (``tokens_of``) fits ``budget``, its last
    turn's messages shortened if need be; and what was left out, in words (None: nothing)."""
    turns = list(window)
    dropped = 0
    while len(turns) > 1 and tokens_of(turns) > budget:
        turns.pop(0)
        dropped += 1
    said = []
    if dropped:
        said.append(f"the {dropped} oldest of {len(window)} turns of its window")
    if turns and tokens_of(turns) > budget:
        turns[-1], cut = _shorten(turns, tokens_of, budget)
        if cut:
            said.append(f"{cut} characters from the middle of turn {turns[-1].turn}'s messages")
    return turns, ("the judge's context held all but " + " and ".join(said)) if said else None


def _shorten(
    turns: list[WindowTurn], tokens_of: Callable[[Sequence[WindowTurn]], int], budget: int
) -> tuple[WindowTurn, int]:
    """The last turn with the middle of its longer messages left out until the prompt fits (a
    bisection on how many characters each message keeps, so a few counts find it), and how
    many characters were left out."""
    last = turns[-1]
    low, high, best = 0, max(len(last.persona), len(last.interlocutor)), 0
    while low <= high:
        keep = (low + high) // 2
        if tokens_of([*turns[:-1], _kept(last, keep)]) <= budget:
            best, low = keep, keep + 1
        else:
            high = keep - 1
    left_out = sum(max(0, len(text) - best) for text in (last.persona, last.interlocutor))
    return _kept(last, best), left_out


def _kept(turn: WindowTurn, keep: int) -> WindowTurn:
    return WindowTurn(
        turn.turn, _middle_out(turn.persona, keep), _middle_out(turn.interlocutor, keep)
    )


def _middle_out(text: str, keep: int) -> str:
    """``text`` with at most ``keep`` of its characters, half from its start, half from its end."""
    if len(text) <= keep:
        return text
    head = keep // 2
    tail = keep - head
    return text[:head] + MARKER.format(n=len(text) - keep) + (text[-tail:] if tail else "")
