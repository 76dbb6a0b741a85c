"""The comparison as Markdown: one table per config (a row per scorer, a column per target),
then the rates, then every difference in a sentence. Also the formatting the terminal and HTML
renderers share, so the three say the same thing in the same words."""

from __future__ import annotations

from typing import Any

from loom_sim.compare.data import ALL_CONFIGS
from loom_sim.compare.spiral import AGREEMENT_NOTE, NOTE, spiral_agreement_rows, spiral_rows

__all__ = [
    "board_cell",
    "board_left_out",
    "board_rows",
    "cell_text",
    "difference_text",
    "no_differences",
    "render_markdown",
    "scorer_rows",
]


BOARD_NOTE = (
    "Every config together, a group of rows per model: the reference judge's scores (what "
    "imported runs' own tool concluded), when there are any, and loom-sim's. Only complete "
    "rollouts are averaged; incomplete ones are counted and listed. A score on a scale "
    "(DCS, HES: 0-2): the mean over rollouts of each rollout's mean, bootstrap 95% interval; "
    "a yes/no score per turn (SIS): the rate of its scored turns, Wilson 95% interval."
)


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


def scorer_rows(
    data: dict[str, Any], config: str, *, against_first: bool = False
) -> tuple[list[str], list[list[str]]]:
    """The header and rows of one config's table: scorers × targets and, with exactly two
    targets, their difference; with ``against_first`` (a page wide enough), with more targets
    too, each other target's difference from the first."""
    targets = [t for t in data["targets"] if data["table"][config][t]["rollouts"]]
    header = ["scorer", *targets]
    others = targets[1:] if len(targets) == 2 or (against_first and len(targets) > 2) else []
    header += [f"{t} − {targets[0]}" for t in others]
    diffs = {
        (d["b"], d["scorer"]): d
        for d in data["differences"]
        if d["config"] == config and d["a"] == targets[0] and d["b"] in others
    }
    rows = []
    for scorer in data["scorers"]:
        row = [
            scorer,
            *(cell_text(data["table"][config][t]["scores"].get(scorer)) for t in targets),
        ]
        row += [difference_text(diffs.get((t, scorer))) for t in others]
        rows.append(row)
    for name in data["rates"]:
        row = [
            f"rate {name}",
            *(cell_text(data["table"][config][t]["rates"][name]) for t in targets),
        ]
        rows.append(row + [""] * len(others))
    footer = ["rollouts (turns)"]
    for t in targets:
        entry = data["table"][config][t]
        footer.append(f"{entry['rollouts']} ({entry['turns']})")
    rows.append(footer + [""] * len(others))
    return header, rows


def board_cell(summary: dict[str, Any] | None) -> str:
    """A leaderboard cell: ``1.91 [1.83, 1.98] n=6`` (a mean over rollouts), or
    ``0.14 [0.07, 0.27] 7/49 turns rate`` (a rate of turns)."""
    if summary and summary.get("kind") == "rate" and summary.get("estimate") is not None:
        text = num(summary["estimate"])
        if summary.get("ci95"):
            text += f" [{num(summary['ci95'][0])}, {num(summary['ci95'][1])}]"
        return text + f" {summary['successes']}/{summary['turns']} turns rate"
    return cell_text(summary)


def board_rows(board: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The leaderboard's header and rows: a group of rows per model (one per judge), the
    model named on its group's first row."""
    header = ["model under evaluation", "judge", "complete rollouts", *board["scorers"]]
    rows = []
    previous = None
    for row in board["rows"]:
        judge = row["judge"] + (f" ({', '.join(row['judged_by'])})" if row["judged_by"] else "")
        cut = len(row["incomplete"])
        counted = f"{row['complete']} of {row['rollouts']}" + (
            f" ({cut} incomplete)" if cut else ""
        )
        cells = [
            board_cell(row["scores"].get(s)) if s in row["scores"] else "" for s in board["scorers"]
        ]
        rows.append(["" if row["model"] == previous else row["model"], judge, counted, *cells])
        previous = row["model"]
    return header, rows


LEFT_OUT_LISTED = 10  # a live matrix may have hundreds of rollouts still going


def board_left_out(board: dict[str, Any]) -> list[str]:
    """One sentence per incomplete rollout: which, how far it got, why it is not averaged
    (the first :data:`LEFT_OUT_LISTED`, then how many more)."""
    seen = set()
    found = []
    for row in board["rows"]:
        for cut in row["incomplete"]:
            key = (row["model"], cut["run"], cut["rollout"])
            if key in seen:
                continue
            seen.add(key)
            why = [cut["status"]] if cut["status"] != "done" else []
            why += [cut["detail"]] if cut["detail"] else []
            found.append(
                f"{row['model']}, {cut['run']} {cut['rollout']}: {cut['turns']} of "
                f"{cut['planned_turns']} turns"
                + (f" ({'; '.join(why)})" if why else "")
                + " — left out of the means."
            )
    if len(found) > LEFT_OUT_LISTED:
        more = len(found) - LEFT_OUT_LISTED
        found = [*found[:LEFT_OUT_LISTED], f"… and {more} more incomplete, left out of the means."]
    return found


def no_differences(data: dict[str, Any]) -> str:
    """Why there is no difference to show."""
    if len(data["targets"]) < 2:
        return "One target only: nothing to compare it with."
    return "No scores of loom-sim's to compare the targets on yet."


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
    board = data.get("board")
    if board:
        lines += ["## By model under evaluation", "", BOARD_NOTE, ""]
        lines += _table(*board_rows(board))
        lines.append("")
        lines += [f"- {sentence}" for sentence in board_left_out(board)]
        lines.append("")
    spiral = data.get("spiral")
    if spiral:
        lines += ["## Spiral-Bench, by model under evaluation", "", NOTE, ""]
        lines += [*_table(*spiral_rows(spiral)), ""]
        if spiral["agreement"]:
            lines += ["### Judge agreement (Spiral-Bench)", "", AGREEMENT_NOTE, ""]
            lines += [*_table(*spiral_agreement_rows(spiral)), ""]
    for config in configs:
        lines += [f"## {config}", ""]
        header, rows = scorer_rows(data, config)
        lines += _table(header, rows)
        lines.append("")
    lines += ["## Differences", ""]
    if not data["differences"]:
        lines += [no_differences(data), ""]
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
