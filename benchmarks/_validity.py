"""What every ``validity_<system>.py`` shares: the labelled sets, their dev / test split, and
figures with intervals.

Two kinds of labelled set, and why both:

* **written by the detectors' authors** — ``tests/data/validity/<system>_<detector>.jsonl``
  (and ``*_heldout.jsonl``): positives and near-misses written while the detector was built.
  Its thresholds and word lists were set on them, so a figure on them says how well the
  detector fits what its authors imagined, not how it does on text it has never seen.
* **blind** — ``tests/data/validity/blind/``: sets written or captured by a separate process
  that never read the detectors, their data or their docs (each folder's ``CARD-*.md`` says
  who and how): paraphrase, hedging, sarcasm, reported speech, buried key sentences, real
  programs' output captured by running them, and labels given to real persona turns in the
  psychosis-bench and Spiral-Bench transcripts (stored as pointers: those files are read from
  your copy of that data (:data:`SHARED`) and never copied here).

Each blind item falls in **dev** or **test** by a hash of its content (:func:`split_of`), so
the split never depends on who looks at it, nor moves when items are added, and an item that
occurs twice falls on one side. Thresholds, word
lists and classifiers are fitted on **dev** only: the authors' sets plus the blind sets' dev
half. **test** is the blind sets' other half; its figures are the ones reports quote.

Figures carry 95 % Wilson intervals (:func:`figures`): a precision of 0.90 on 20 cases is
[0.70, 0.97], and a reader should see that.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "validity"
BLIND = DATA / "blind"
#: Your copy of the psychosis-bench and Spiral-Bench data, laid out as
#: ``psychosis-bench-2.0/…`` and ``spiral-bench/…``: ``LOOM_SIM_BENCH_DATA``, else a
#: ``shared/data`` folder beside the checkout. The pointer sets are measured only where it is.
SHARED = Path(os.environ.get("LOOM_SIM_BENCH_DATA") or ROOT.parent / "shared" / "data")

DEV, TEST = "dev", "test"
SPLITS = (DEV, TEST)

#: What a detector must reach on the test split to be called more than a weak signal.
BAR = {"precision": 0.85, "recall": 0.80}


#: What an item's split does not depend on: its name, its annotations, its split.
_NOT_CONTENT = frozenset({"id", "kind", "note", "split"})


def content_key(item: dict[str, Any]) -> str:
    """The item without its id and annotations: what it says, and its label."""
    return json.dumps(
        {k: v for k, v in item.items() if k not in _NOT_CONTENT}, sort_keys=True, ensure_ascii=False
    )


def split_of(item: dict[str, Any]) -> str:
    """``dev`` or ``test`` for a blind item, by the first byte of a hash of its content: half
    each, fixed for good, whoever asks — and an item that occurs twice (a program's ``>>> ``
    captured in many sessions) is on one side only, so no test item was seen in dev."""
    digest = hashlib.sha256(f"loom-sim validity split/{content_key(item)}".encode()).digest()
    return TEST if digest[0] < 128 else DEV


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def authors(name: str) -> list[dict[str, Any]]:
    """The authors' set ``name`` (``harness_failure_pattern``…), every item in dev."""
    path = DATA / f"{name}.jsonl"
    return [{**item, "split": DEV} for item in read_jsonl(path)] if path.exists() else []


def _resolve(item: dict[str, Any]) -> str | None:
    """The text a pointer item names in :data:`SHARED`, or None where that data is absent."""
    path = SHARED / item["file"]
    if not path.is_file():
        return None
    node: Any = _load_shared(path)
    for key in item["locate"]:
        node = node[key]
    return node if isinstance(node, str) else None


_SHARED_CACHE: dict[Path, Any] = {}


def _load_shared(path: Path) -> Any:
    if path not in _SHARED_CACHE:
        _SHARED_CACHE[path] = json.loads(path.read_text(encoding="utf-8"))
    return _SHARED_CACHE[path]


def blind(name: str, text_key: str = "text") -> list[dict[str, Any]]:
    """The blind set ``name`` with each item's split. A pointer item (``file`` and ``locate``
    into :data:`SHARED`) gets its text read from there, and is left out where that data
    is absent (a checkout without it measures on the rest)."""
    path = BLIND / f"{name}.jsonl"
    if not path.exists():
        return []
    out = []
    for written in read_jsonl(path):
        item = {**written, "split": split_of(written)}
        if "locate" in written:
            text = _resolve(written)
            if text is None:
                continue
            item[text_key] = text
        out.append(item)
    return out


def by_split(items: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for item in items:
        grouped[item["split"]].append(item)
    return grouped


def counts(decisions: Iterable[tuple[bool, bool]]) -> tuple[int, int, int, int]:
    """(true positives, false positives, false negatives, decisions) of (predicted, labelled)."""
    tp = fp = fn = n = 0
    for predicted, labelled in decisions:
        n += 1
        tp += predicted and labelled
        fp += predicted and not labelled
        fn += labelled and not predicted
    return tp, fp, fn, n


def _interval(hits: int, total: int) -> list[float] | None:
    from loom_sim.rates import wilson

    found = wilson(hits, total)
    return [round(found[0], 3), round(found[1], 3)] if found else None


def figures(
    detector: str, path: str, split: str, tp: int, fp: int, fn: int, n: int, **extra: Any
) -> dict[str, Any]:
    """One row: precision and recall with their 95 % Wilson intervals (None where nothing was
    predicted, or nothing was there to find: the rate is then 1.0 by convention and has no
    interval)."""
    return {
        "detector": detector,
        "path": path,
        "split": split,
        "n": n,
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "precision_ci": _interval(tp, tp + fp),
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        "recall_ci": _interval(tp, tp + fn),
        **extra,
    }


def rows_by_split(
    detector: str,
    path: str,
    items: Iterable[dict[str, Any]],
    decide: Any,
    **extra: Any,
) -> Iterator[dict[str, Any]]:
    """A row per split for ``decide(item) -> [(predicted, labelled), ...]`` over ``items``."""
    for split, part in by_split(items).items():
        decisions = [d for item in part for d in decide(item)]
        if decisions:
            yield figures(detector, path, split, *counts(decisions), **extra)


def short(row: dict[str, Any]) -> str:
    """``0.91 [0.80, 0.96]`` for precision and recall, for a printed table."""

    def one(name: str) -> str:
        ci = row.get(f"{name}_ci")
        return f"{row[name]:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else " [   -    ]")

    return f"{one('precision'):>18} {one('recall'):>18}"
