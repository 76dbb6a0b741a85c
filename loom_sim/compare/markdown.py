"""The comparison as Markdown: one table per config (a row per scorer, a column per target),
then the rates, then every difference in a sentence. Also the formatting the terminal and HTML
renderers share, so the three say the same thing in the same words."""

from __future__ import annotations

from typing import Any

from loom_sim.compare.data import ALL_CONFIGS

__all__ = ["cell_text", "difference_text", "render_markdown", "scorer_rows"]


def num(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def signed(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:+.{digits}f}".replace("-", "−")


def cell_text(summary: dict[str, Any] | None) -> str:
    """``0.72 [0.61, 0.80] n=4`` (a rate: ``0.50 [0.09, 0.91] n=2 rate``); ``–`` with no value;
    rollouts without a value are counted after."""
    if not summary or summary.get("estimate") is None:
        missing = (summary or {}).get("no_value") or 0
        return "–" + (f" ({missing} without a value)" if missing else "")
    text = num(summary["estimate"])
    ci = summary.get("ci95")
    if ci:
        text += f" [{num(ci[0])}, {num(ci[1])}]"
    text += f" n={summary['n']}"
    if summary.get("method") == "wilson":
        text += " rate"
    if summary.get("no_value"):
        text += f" (+{summary['no_value']} without a value)"
    return text


def difference_text(diff: dict[str, Any] | None) -> str:
    """``+0.05 [−0.10, +0.20] paired, within noise``."""
    if not diff or diff.get("estimate") is None:
        return "–"
    text = signed(diff["estimate"])
    if diff.get("ci95"):
        low, high = diff["ci95"]
        text += f" [{signed(low)}, {signed(high)}]"
    text += " paired" if diff.get("paired") else " unpaired"
    if diff.get("within_noise") is True:
        text += ", within noise"
    elif diff.get("within_noise") is False:
        text += ", beyond noise"
    else:
        text += ", too few to tell"
    return text


def scorer_rows(data: dict[str, Any], config: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of one config's table: scorers × targets (and, with exactly two
    targets, their difference)."""
    targets = [t for t in data["targets"] if data["table"][config][t]["rollouts"]]
    header = ["scorer", *targets]
    pair = len(targets) == 2
    if pair:
        header.append(f"{targets[1]} − {targets[0]}")
    diffs = {
        d["scorer"]: d
        for d in data["differences"]
        if d["config"] == config and pair and (d["a"], d["b"]) == tuple(targets)
    }
    rows = []
    for scorer in data["scorers"]:
        row = [
            scorer,
            *(cell_text(data["table"][config][t]["scores"].get(scorer)) for t in targets),
        ]
        if pair:
            row.append(difference_text(diffs.get(scorer)))
        rows.append(row)
    for name in data["rates"]:
        row = [
            f"rate {name}",
            *(cell_text(data["table"][config][t]["rates"][name]) for t in targets),
        ]
        if pair:
            row.append("")
        rows.append(row)
    footer = ["rollouts (turns)"]
    for t in targets:
        entry = data["table"][config][t]
        footer.append(f"{entry['rollouts']} ({entry['turns']})")
    if pair:
        footer.append("")
    rows.append(footer)
    return header, rows


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(data: dict[str, Any], title: str = "Comparison") -> str:
    configs = list(data["configs"])
    real = [c for c in configs if c != ALL_CONFIGS]
    lines = [f"# {title}: {_count(len(data['targets']), 'target')} × {_count(len(real), 'config')}"]
    lines.append("")
    for notice in data["notices"]:
        lines += [f"> **Note.** {notice}", ""]
    lines.append(
        "Each cell: the mean over rollouts of each rollout's value, its 95% interval "
        "(bootstrap over rollouts; Wilson for rates) and the rollouts with a value. "
        "Differences are paired when the same config and seed ran against both targets."
    )
    lines.append("")
    lines.append("Runs: " + ", ".join(f"`{r['dir']}` ({r['kind']})" for r in data["runs"]))
    lines.append("")
    for config in configs:
        lines += [f"## {config}", ""]
        header, rows = scorer_rows(data, config)
        lines += _table(header, rows)
        lines.append("")
    lines += ["## Differences", ""]
    if not data["differences"]:
        lines += ["One target only: nothing to compare it with.", ""]
    for config in configs:
        mine = [d for d in data["differences"] if d["config"] == config]
        if not mine:
            continue
        beyond = [d for d in mine if d["within_noise"] is False]
        rest = [d for d in mine if d["within_noise"] is not False]
        lines += [
            f"**{config}**: {len(beyond)} of {len(mine)} differences are more than noise.",
            "",
        ]
        lines += [f"- {d['sentence']}" for d in beyond]
        if rest:
            names = ", ".join(d["scorer"] for d in rest if d["within_noise"] is True)
            few = ", ".join(d["scorer"] for d in rest if d["within_noise"] is None)
            if names:
                lines.append(f"- Within noise: {names}.")
            if few:
                lines.append(f"- Too few rollouts to tell: {few}.")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
