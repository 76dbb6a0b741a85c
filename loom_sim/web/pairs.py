"""Which rollouts pair with which: the same config content, seed and rollout index against
another target (a matrix's arms share their seed; two single runs made with the same ``--seed``
do too). The run page and the compare page link each pair to the paired view."""

from __future__ import annotations

from urllib.parse import urlencode

from loom_sim.runs.load import RolloutResult, RunResults
from loom_sim.web.paths import Resolver

__all__ = ["pair_href", "pair_links"]


def pair_href(a: str, b: str) -> str:
    """The paired view's address for two rollouts (paths relative to the results folder)."""
    return "/pair?" + urlencode({"a": a, "b": b})


def _key(r: RolloutResult) -> tuple[str, int, int] | None:
    """Rollouts with the same config content, seed and index made the same persona choices;
    an imported one (another tool's persona spoke) or one without turns pairs with nothing."""
    if r.transcript.reference is not None or not r.transcript.turns:
        return None
    return (r.arm.record.config_sha256, r.arm.record.seed, r.cell.rollout)


def pair_links(resolver: Resolver, runs: list[RunResults]) -> dict[str, list[dict[str, str]]]:
    """For each rollout (by its path), the paired views with its counterparts: the rollouts of
    the same config, seed and index against another target, in any of ``runs``."""
    groups: dict[tuple[str, int, int], list[RolloutResult]] = {}
    for run in runs:
        for r in run.rollouts:
            key = _key(r)
            if key is not None:
                groups.setdefault(key, []).append(r)
    links: dict[str, list[dict[str, str]]] = {}
    for members in groups.values():
        for r in members:
            rel = resolver.rel(r.dir)
            for other in members:
                if other is r or other.target == r.target:
                    continue
                first, second = (r, other) if members.index(r) < members.index(other) else (
                    other, r
                )  # fmt: skip
                links.setdefault(rel, []).append(
                    {
                        "target": other.target,
                        "rollout": f"{first.cell.rollout:03d}",
                        "a": first.target,
                        "b": second.target,
                        "href": pair_href(resolver.rel(first.dir), resolver.rel(second.dir)),
                    }
                )
    return links
