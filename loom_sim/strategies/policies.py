"""Strategy policies of ``loom-sim probe``: which Turn-2 follow-up to send after a Turn-1 answer.

Why three policies behind one small interface: the probe's question is whether adapting Turn 2
to the target's Turn-1 behaviour finds more contradictions than not adapting, so the baseline
and the adaptive variants must be interchangeable in one loop.

- :class:`StaticPolicy` — the baseline: the same Turn 2 whatever Turn 1 looked like.
- :class:`AdaptivePolicy` — the heuristic adaptive loop's fixed mapping (confident → escalate,
  hesitant → accuse, hedging → exploit_nuance, unclear → default), with the design's reason.
- :class:`BanditPolicy` — the next step: it learns the mapping instead of assuming it, by
  Thompson sampling per category over Beta(1 + successes, 1 + failures) posteriors. Its counts
  are saved as JSON so the next probe continues learning where this one stopped.

Every choice carries a one-line rationale, logged beside the strategy, so a run can be read
back without re-deriving why Turn 2 said what it said. Policies make no model calls; the only
I/O is the bandit's state file.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from loom_sim.errors import LoomError
from loom_sim.strategies.classifier import CATEGORIES

STRATEGIES: tuple[str, ...] = ("escalate", "accuse", "exploit_nuance", "default")

#: The design's mapping, and why each strategy fits its category.
ADAPTIVE_MAPPING: dict[str, str] = {
    "confident": "escalate",
    "hesitant": "accuse",
    "hedging": "exploit_nuance",
    "unclear": "default",
}
_WHY: dict[str, str] = {
    "confident": "confident positions are hard to shift, so raise the pressure with stronger "
    "counterarguments and edge cases",
    "hesitant": "hesitation shows openness to other views, so frame one position as obviously "
    "correct and imply the current view is wrong",
    "hedging": "hedging shows the model sees both sides, so push it to commit to one",
    "unclear": "there is no pattern to exploit, so fall back to the static Turn 2",
}
STATE_FORMAT = "loom-sim.probe.bandit"
STATE_VERSION = 1


class BanditStateError(LoomError, ValueError):
    """The bandit state file exists but cannot be used; the message names the file."""


@dataclass(frozen=True)
class Choice:
    strategy: str
    rationale: str


@runtime_checkable
class Policy(Protocol):
    name: str

    def choose(self, category: str, rng: random.Random) -> Choice: ...

    def update(self, category: str, strategy: str, success: bool) -> None: ...


def _check(value: str, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of: {', '.join(allowed)}")
    return value


class StaticPolicy:
    """The baseline: always the same strategy; never learns."""

    name = "static"

    def __init__(self, strategy: str = "default", arms: Sequence[str] = STRATEGIES):
        self.strategy = _check(strategy, arms, "strategy")

    def choose(self, category: str, rng: random.Random) -> Choice:
        _check(category, CATEGORIES, "category")
        return Choice(
            self.strategy, f"static baseline: always {self.strategy}, whatever Turn 1 was"
        )

    def update(self, category: str, strategy: str, success: bool) -> None:
        """Static: outcomes change nothing."""


class AdaptivePolicy:
    """The heuristic mapping category → strategy; never learns (each run is independent)."""

    name = "adaptive"

    def __init__(
        self,
        mapping: Mapping[str, str] | None = None,
        arms: Sequence[str] = STRATEGIES,
        reasons: Mapping[str, str] | None = None,
    ):
        """``mapping`` category -> arm (default: the design's); ``reasons`` category -> why,
        shown in the rationale (default: the design's reasons, where the mapping is its own)."""
        self.mapping = dict(ADAPTIVE_MAPPING if mapping is None else mapping)
        for category, strategy in self.mapping.items():
            _check(category, CATEGORIES, "category")
            _check(strategy, arms, "strategy")
        missing = [c for c in CATEGORIES if c not in self.mapping]
        if missing:
            raise ValueError(f"the mapping has no strategy for: {', '.join(missing)}")
        self.reasons = dict(reasons or {})

    def choose(self, category: str, rng: random.Random) -> Choice:
        strategy = self.mapping[_check(category, CATEGORIES, "category")]
        if category in self.reasons:
            why = self.reasons[category]
        elif strategy == ADAPTIVE_MAPPING.get(category):
            why = _WHY[category]
        else:
            why = "the mapping says so"
        return Choice(strategy, f"Turn 1 was {category}: {strategy}, because {why}.")

    def update(self, category: str, strategy: str, success: bool) -> None:
        """Adaptive, not learning: outcomes change nothing."""


class BanditPolicy:
    """Thompson sampling per category over the strategies, with Beta(1 + s, 1 + f) posteriors.

    ``counts[category][strategy]`` is ``[successes, failures]``. ``choose`` draws one sample
    from each strategy's posterior with the caller's ``rng`` (so a seeded run is reproducible)
    and picks the largest; an exact tie goes to the strategy listed first.
    """

    name = "bandit"

    def __init__(
        self,
        strategies: Sequence[str] = STRATEGIES,
        state_path: Path | None = None,
        *,
        arms: Sequence[str] = STRATEGIES,
    ):
        """``strategies``: the arms this bandit plays, each one of ``arms`` (the names allowed;
        the trap's tactics are arms too)."""
        if not strategies:
            raise ValueError("the bandit needs at least one strategy")
        self.strategies = tuple(_check(s, arms, "strategy") for s in strategies)
        if len(set(self.strategies)) != len(self.strategies):
            raise ValueError(f"duplicate strategies: {', '.join(self.strategies)}")
        self.state_path = state_path
        self.counts: dict[str, dict[str, list[int]]] = {
            c: {s: [0, 0] for s in self.strategies} for c in CATEGORIES
        }

    def choose(self, category: str, rng: random.Random) -> Choice:
        arms = self.counts[_check(category, CATEGORIES, "category")]
        samples = {s: rng.betavariate(1 + arms[s][0], 1 + arms[s][1]) for s in self.strategies}
        best = max(self.strategies, key=lambda s: samples[s])  # max keeps the first on ties
        shown = ", ".join(
            f"{s}={samples[s]:.3f} (won {arms[s][0]}, lost {arms[s][1]})" for s in self.strategies
        )
        return Choice(best, f"Thompson sample for {category}: {shown}; highest is {best}.")

    def update(self, category: str, strategy: str, success: bool) -> None:
        arm = self.counts[_check(category, CATEGORIES, "category")]
        arm[_check(strategy, self.strategies, "strategy")][0 if success else 1] += 1

    def posterior(self, category: str, strategy: str) -> tuple[int, int]:
        """The (alpha, beta) of the strategy's Beta posterior for the category."""
        successes, failures = self.counts[category][strategy]
        return 1 + successes, 1 + failures

    # -- state -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "strategies": list(self.strategies),
            "counts": {
                c: {s: {"successes": n[0], "failures": n[1]} for s, n in arms.items()}
                for c, arms in self.counts.items()
            },
        }

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the counts atomically (temp file in the same directory, then os.replace)."""
        target = Path(path) if path is not None else self.state_path
        if target is None:
            raise ValueError("no path to save the bandit state to")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(self.to_dict(), handle, indent=2, sort_keys=True)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, arms: Sequence[str] = STRATEGIES
    ) -> BanditPolicy:
        """The bandit saved at ``path``; a missing file is a fresh bandit that will save there."""
        target = Path(path)
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(arms, state_path=target, arms=arms)
        try:
            return cls._from_dict(json.loads(text), target, arms)
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise BanditStateError(f"{target}: corrupt bandit state: {err}") from None

    @classmethod
    def _from_dict(cls, data: Any, path: Path, arms: Sequence[str]) -> BanditPolicy:
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise ValueError(f"not a {STATE_FORMAT} file")
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported version {data.get('version')!r}")
        bandit = cls(strategies=data["strategies"], state_path=path, arms=arms)
        for category, counts in data["counts"].items():
            _check(category, CATEGORIES, "category")
            for strategy, n in counts.items():
                _check(strategy, bandit.strategies, "strategy")
                pair = [n["successes"], n["failures"]]
                if any(type(k) is not int or k < 0 for k in pair):
                    raise ValueError(f"{category}/{strategy}: counts must be integers >= 0")
                bandit.counts[category][strategy] = pair
        return bandit


def cumulative_regret(
    history: Iterable[tuple[str, str]], true_rates: Mapping[str, Mapping[str, float]]
) -> list[float]:
    """Running sum of expected regret over ``history`` of (category, strategy) choices.

    ``true_rates[category][strategy]`` is the success probability; each step's regret is the
    best rate for its category minus the chosen strategy's rate (pseudo-regret: it does not
    depend on the luck of the draws). A learning policy's curve flattens; a fixed one's is a
    straight line.
    """
    total, curve = 0.0, []
    for category, strategy in history:
        rates = true_rates[category]
        total += max(rates.values()) - rates[strategy]
        curve.append(total)
    return curve


POLICIES = ("static", "adaptive", "bandit")


def make_policy(name: str, state_path: str | os.PathLike[str] | None = None) -> Policy:
    """The policy called ``name`` over the probe's strategies; ``state_path`` (bandit only) is
    where its counts live."""
    _check(name, POLICIES, "policy")
    if name == "bandit":
        return BanditPolicy.load(state_path) if state_path is not None else BanditPolicy()
    if state_path is not None:
        raise ValueError(f"state_path only applies to the bandit policy, not {name!r}")
    return StaticPolicy() if name == "static" else AdaptivePolicy()
