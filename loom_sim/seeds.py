"""Seeds for every random choice, derived from the run's seed.

A call's seed depends only on (run seed, rollout, role, turn, attempt), never on how many calls
came before, so a resumed rollout makes exactly the calls an uninterrupted one would have.
"""

from __future__ import annotations

import hashlib


def derive_seed(run_seed: int, *parts: object) -> int:
    """A stable 31-bit seed for ``parts`` (Python's hash() is salted per process; this is not)."""
    text = ":".join([str(run_seed), *map(str, parts)])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 33


class SeedSource:
    """The seeds of one rollout."""

    def __init__(self, run_seed: int, rollout_index: int):
        self.run_seed = run_seed
        self.rollout_seed = derive_seed(run_seed, "rollout", rollout_index)

    def for_call(self, role: str, turn: int, attempt: int = 0) -> int:
        return derive_seed(self.rollout_seed, role, turn, attempt)
