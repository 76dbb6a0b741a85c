"""Precision and recall of every detector whose verdict a score or a report rests on, on dev
and on held-out test items, with 95 % intervals.

    .venv/bin/python benchmarks/bench_validity.py              # deterministic paths
    .venv/bin/python benchmarks/bench_validity.py --embedded   # and the embedded model's
    .venv/bin/python benchmarks/bench_validity.py --judge local/smollm2   # a judge model's
    .venv/bin/python benchmarks/bench_validity.py --write      # store them for the reports

Each system measures its own detectors in ``benchmarks/validity_<system>.py``, whose
``measure(embedded)`` returns one row per detector, path and split; this script runs every one
it finds and prints two tables: **dev** (the sets the detectors' authors wrote, and half of the
blind sets: what thresholds and classifiers were fitted on) and **test** (the blind sets' other
half, never fitted on: these are the figures reports quote). How the sets are made and split:
``benchmarks/_validity.py``. ``--judge MODEL`` adds the judge confirmation path for
capitulation (the ``capitulation_judged`` scorer's request, answered by MODEL, on held-out
items). ``--write`` stores the rows measured in ``loom_sim/validity/measured.json`` with
today's date, keeping the stored rows of paths this run did not measure (embedded, judge); a
test re-measures the deterministic rows and fails when they differ.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "loom_sim" / "validity" / "measured.json"
DOC = HERE.parent / "docs" / "validity.md"
BEGIN, END = "<!-- figures: bench_validity.py --write -->", "<!-- end of figures -->"
sys.path.insert(0, str(HERE))


def measures() -> dict[str, Any]:
    """Every ``validity_<system>.py`` beside this script, by system, as a loaded module."""
    found = {}
    for path in sorted(HERE.glob("validity_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found[path.stem.removeprefix("validity_")] = module
    return found


def rows(embedded: bool = False) -> list[dict[str, Any]]:
    out = []
    for system, module in measures().items():
        for row in module.measure(embedded=embedded):
            out.append({"system": system, **row})
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    """The figures as docs/validity.md shows them: per detector, held-out then dev."""
    from _validity import BAR

    def cell(row: dict[str, Any] | None, name: str) -> str:
        if row is None:
            return "—"
        ci = row.get(f"{name}_ci")
        return f"{row[name]:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    lines = [
        "| system | detector | path | held-out n | held-out precision | held-out recall "
        "| dev n | dev precision | dev recall | standing |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = list(dict.fromkeys((r["system"], r["detector"], r["path"]) for r in table))
    for system, detector, path in keys:
        found = {
            r["split"]: r
            for r in table
            if (r["system"], r["detector"], r["path"]) == (system, detector, path)
        }
        test, dev = found.get("test"), found.get("dev")
        if test is None:
            standing = "no held-out set"
        else:
            gaps = [
                f"{k} {BAR[k] - test[k]:.2f} below {BAR[k]:.2f}" for k in BAR if test[k] < BAR[k]
            ]
            standing = ("weak signal: " + ", ".join(gaps)) if gaps else "meets the bar"
        lines.append(
            f"| {system} | `{detector}` | {path} | {test['n'] if test else '—'} "
            f"| {cell(test, 'precision')} | {cell(test, 'recall')} | {dev['n'] if dev else '—'} "
            f"| {cell(dev, 'precision')} | {cell(dev, 'recall')} | {standing} |"
        )
    return "\n".join(lines)


#: The docs whose "held-out precision | held-out recall" tables quote a detector per row
#: (named in backticks): --write keeps their last two cells equal to the figures.
QUOTING = ("signals.md", "debates.md", "harness.md")


def update_quotes(table: list[dict[str, Any]]) -> None:
    import re

    held_out = {
        r["detector"]: r for r in table if (r["split"], r["path"]) == ("test", "deterministic")
    }
    for name in QUOTING:
        path = DOC.parent / name
        lines, inside = [], False
        for line in path.read_text("utf-8").split("\n"):
            if line.startswith("|") and "held-out precision | held-out recall" in line:
                inside = True
            elif not line.startswith("|"):
                inside = False
            named = re.search(r"`([\w\[\]]+)`", line) if inside else None
            if named and named.group(1) in held_out:
                row = held_out[named.group(1)]
                cells = line.strip("|").split("|")
                cells[-2:] = [f" {row['precision']:.2f} ", f" {row['recall']:.2f} "]
                lines.append("|" + "|".join(cells) + "|")
                continue
            lines.append(line)
        path.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    embedded, write = "--embedded" in sys.argv, "--write" in sys.argv
    judge = None
    if "--judge" in sys.argv:
        at = sys.argv.index("--judge") + 1
        if at >= len(sys.argv) or sys.argv[at].startswith("--"):
            raise SystemExit("--judge needs a model spec, for example --judge local/smollm2")
        judge = sys.argv[at]
        from loom_sim.models.base import ModelError
        from loom_sim.models.hub import ModelHub

        try:
            ModelHub().client(judge, 0, "judge")  # a wrong spec fails here, before any work
        except ModelError as err:
            raise SystemExit(f"--judge {judge}: {err}") from None
    table = rows(embedded=embedded)
    if judge is not None:
        try:
            judged = measures()["loom"].judged_capitulation(judge)
        except ModelError as err:  # a missing key, a dead server: say so, measure nothing
            raise SystemExit(f"--judge {judge}: {err}") from None
        table += [{"system": "loom", **r} for r in judged]
    from _validity import BAR, short

    for split in ("dev", "test"):
        print(f"\n{split.upper()}")
        print(
            f"{'system':<9} {'detector':<32} {'path':<14} {'n':>4} {'precision [95% CI]':>18} "
            f"{'recall [95% CI]':>18}"
        )
        for row in (r for r in table if r["split"] == split):
            weak = row["precision"] < BAR["precision"] or row["recall"] < BAR["recall"]
            print(
                f"{row['system']:<9} {row['detector']:<32} {row['path']:<14} {row['n']:>4} "
                f"{short(row)}" + ("  weak" if split == "test" and weak else "")
            )
    if write:
        if SHIPPED.exists():
            # keep the stored rows of the model paths this run did not measure
            now = {(r["system"], r["detector"], r["path"], r["split"]) for r in table}
            table += [
                r
                for r in json.loads(SHIPPED.read_text("utf-8"))["rows"]
                if r["path"] != "deterministic"
                and (r["system"], r["detector"], r["path"], r["split"]) not in now
            ]
        measured = datetime.datetime.now(datetime.UTC).date().isoformat()
        SHIPPED.write_text(
            json.dumps({"measured": measured, "rows": table}, indent=1) + "\n", encoding="utf-8"
        )
        doc = DOC.read_text("utf-8")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        DOC.write_text(f"{head}{BEGIN}\n{markdown(table)}\n{END}{tail}", encoding="utf-8")
        update_quotes(table)
        print(f"\nwritten: {SHIPPED.relative_to(HERE.parent)} and {DOC.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
