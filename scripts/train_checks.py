"""Fit the learned checks (loom_sim/signals/learned/*.json) on dev items only.

    .venv/bin/python scripts/train_checks.py            # every check
    .venv/bin/python scripts/train_checks.py loop       # one
    .venv/bin/python scripts/train_checks.py crux_type  # the multi-class check

Each check is a logistic regression (scikit-learn) over the features its module computes from
the run's MiniLM embeddings. It is fitted on the **dev** split of its labelled items (the sets
the detectors' authors wrote, and the dev half of the blind sets: benchmarks/_validity.py);
the test half is never read here.

The regularisation strength and the threshold are chosen by 5-fold cross-validation on
dev: the threshold with the best F-beta over the out-of-fold probabilities, ties going to the
one nearest 0.5. The loop check uses F0.5 (precision weighs twice recall, since a finding
makes the persona rewrite its draft, and a false one costs a call and a needless rewrite);
the debate's citation check F1, its pair check F2 (the gate only decides whether the detector
model is asked). Rows of one group (a window's pairs) stay in one fold. The crux-type check is
multi-class (a multinomial regression, no threshold): its regularisation is chosen by the
cross-validated macro F1. The file records its data card: the
sets, the counts, the cross-validated figures, the date and versions.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _validity  # noqa: E402

OUT = ROOT / "loom_sim" / "signals" / "learned"


@dataclass(frozen=True)
class Spec:
    sets: tuple[str, ...]  # authors' and blind set names
    features: tuple[str, ...]
    # (features, labels, groups): rows of one group (a window's pairs) stay in one fold
    rows: Callable[[Any, list[dict[str, Any]]], tuple[np.ndarray, np.ndarray, np.ndarray]]
    beta: float = 0.5  # the F-beta the threshold is chosen by: below 1, precision weighs more


def _loop_rows(backend, items):
    from loom_sim.signals.learned import loop

    x, y = [], []
    for item in items:
        vectors = backend.vectors([*item["window"], item["candidate"]])
        x.append(loop.features(item["window"], item["candidate"], vectors))
        y.append(bool(item["label"]))
    return np.array(x), np.array(y), np.arange(len(y))


def _citation_rows(backend, items):
    from loom_sim.debate import learned

    x = [
        learned.citation_features(backend, i["message"], i["claim"], i["stance"] == "YES")
        for i in items
    ]
    return np.array(x), np.array([bool(i["supports"]) for i in items]), np.arange(len(items))


def _pair_rows(backend, items):
    from itertools import combinations

    from loom_sim.debate import learned
    from loom_sim.debate.opposition import Claim

    x, y, groups = [], [], []
    for group, item in enumerate(items):
        window = [
            Claim(m["id"], m["speaker"], m["text"], m.get("reply_to")) for m in item["messages"]
        ]
        truth = {tuple(sorted(p)) for p in item["opposed"]}
        for pair in combinations(sorted({c.speaker for c in window}), 2):
            x.append(learned.pair_features(backend, window, pair))
            y.append(pair in truth)
            groups.append(group)
    return np.array(x), np.array(y), np.array(groups)


def _specs() -> dict[str, Spec]:
    from loom_sim.debate import learned
    from loom_sim.signals.learned import loop

    return {
        "loop": Spec(("loom_loop", "loom_loop_heldout"), loop.FEATURES, _loop_rows),
        # a refused citation costs the card a retry, a wrong one passed costs a bad card: F1
        "citation": Spec(("debate_citation",), learned.CITATION_FEATURES, _citation_rows, 1.0),
        # the gate only decides whether the detector model is asked (its answer then needs
        # corroborating): a missed disagreement is lost, a false one costs a call: F2
        "pair": Spec(("debate_gate",), learned.PAIR_FEATURES, _pair_rows, 2.0),
    }


def _dev(sets: tuple[str, ...]) -> list[dict[str, Any]]:
    items = []
    for name in sets:
        items += _validity.authors(name)
        items += [i for i in _validity.blind(name) if i["split"] == _validity.DEV]
    return items


def _f_beta(
    p: np.ndarray, y: np.ndarray, threshold: float, beta: float
) -> tuple[float, float, float]:
    got = p >= threshold
    tp = float(np.sum(got & y))
    precision = tp / max(1.0, float(np.sum(got)))
    recall = tp / max(1.0, float(np.sum(y)))
    b2 = beta * beta
    f = (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0
    return f, precision, recall


def _g(value: float) -> float:
    """Seven significant digits: small in the file, exact enough to give the same verdicts."""
    return float(f"{float(value):.7g}")


def fit(name: str, spec: Spec, backend) -> dict[str, Any]:
    import sklearn
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold, cross_val_predict

    items = _dev(spec.sets)
    x, y, groups = spec.rows(backend, items)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-6] = 1.0  # a feature that does not vary: leave it unscaled
    z = (x - mean) / scale
    if len(set(groups.tolist())) == len(y):  # one row a group: plain stratified folds
        folds: Any = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    else:
        folds = StratifiedGroupKFold(n_splits=5, shuffle=True, random_state=0)
    best = None
    for c in (0.03, 0.1, 0.3, 1.0, 3.0):
        model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
        p = cross_val_predict(model, z, y, cv=folds, groups=groups, method="predict_proba")[:, 1]
        for threshold in np.arange(0.30, 0.91, 0.05):
            f, precision, recall = _f_beta(p, y, float(threshold), spec.beta)
            key = (round(f, 4), -abs(threshold - 0.5))
            if best is None or key > best[0]:
                best = (key, c, float(threshold), precision, recall)
    assert best is not None
    _, c, threshold, precision, recall = best
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(z, y)
    return {
        "features": list(spec.features),
        "mean": [_g(v) for v in mean],
        "scale": [_g(v) for v in scale],
        "coef": [_g(v) for v in model.coef_[0]],
        "intercept": _g(model.intercept_[0]),
        "threshold": round(threshold, 2),
        "card": {
            "trained_on": "dev split only: "
            + ", ".join(f"{s} (authors' set, blind dev half)" for s in spec.sets),
            "n": len(y),
            "positives": int(y.sum()),
            "model": f"logistic regression, C={c}, balanced classes, standardised features",
            "threshold_by": f"F{spec.beta:g} over the out-of-fold probabilities",
            "cross_validated_on_dev": {
                "folds": 5,
                "precision": round(precision, 3),
                "recall": round(recall, 3),
            },
            "trained": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "scikit_learn": sklearn.__version__,
            "script": "scripts/train_checks.py",
        },
    }


def _crux_rows(backend, items):
    from loom_sim.debate import learned

    x = [learned.crux_features(backend, item["texts"]) for item in items]
    y = [learned.CRUX_TYPES.index(item["type"]) for item in items]
    return np.array(x), np.array(y)


def _macro(y: np.ndarray, got: np.ndarray, classes: int) -> tuple[float, float]:
    precisions, recalls = [], []
    for k in range(classes):
        tp = float(np.sum((got == k) & (y == k)))
        precisions.append(tp / float(np.sum(got == k)) if np.any(got == k) else 1.0)
        recalls.append(tp / float(np.sum(y == k)) if np.any(y == k) else 1.0)
    return float(np.mean(precisions)), float(np.mean(recalls))


def fit_choice(backend) -> dict[str, Any]:
    """The crux-type check: a multinomial regression over the room's mean MiniLM vector and its
    cue counts, its regularisation chosen by the 5-fold cross-validated macro F1 on dev."""
    import sklearn
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from loom_sim.debate import learned

    items = _dev(("debate_crux_type",))
    x, y = _crux_rows(backend, items)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = (x - mean) / scale
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    best = None
    for c in (0.03, 0.1, 0.3, 1.0):
        model = LogisticRegression(C=c, max_iter=5000)
        got = cross_val_predict(model, z, y, cv=folds)
        precision, recall = _macro(y, got, len(learned.CRUX_TYPES))
        f = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if best is None or round(f, 4) > best[0]:
            best = (round(f, 4), c, precision, recall)
    assert best is not None
    _, c, precision, recall = best
    model = LogisticRegression(C=c, max_iter=5000).fit(z, y)
    return {
        "classes": list(learned.CRUX_TYPES),
        "features": list(learned.CRUX_FEATURES),
        "mean": [_g(v) for v in mean],
        "scale": [_g(v) for v in scale],
        "coef": [[_g(v) for v in row] for row in model.coef_],
        "intercept": [_g(v) for v in model.intercept_],
        "card": {
            "trained_on": "dev split only: debate_crux_type (authors' set, blind dev half)",
            "n": len(y),
            "per_type": {k: int(np.sum(y == i)) for i, k in enumerate(learned.CRUX_TYPES)},
            "model": f"multinomial logistic regression, C={c}, standardised features",
            "cross_validated_on_dev": {
                "folds": 5,
                "macro_precision": round(precision, 3),
                "macro_recall": round(recall, 3),
            },
            "trained": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "scikit_learn": sklearn.__version__,
            "script": "scripts/train_checks.py",
        },
    }


def main(argv: list[str]) -> None:
    from loom_sim.signals.embedding import load_backend

    backend = load_backend("embedding")
    if backend.name != "embedding":
        raise SystemExit("the embedding model could not be loaded: the checks read MiniLM")
    specs = _specs()
    if not argv or "crux_type" in argv:
        data = fit_choice(backend)
        (OUT / "crux_type.json").write_text(json.dumps(data) + "\n", encoding="utf-8")
        figures = data["card"]["cross_validated_on_dev"]
        print(
            f"crux_type: n={data['card']['n']} cv macro precision "
            f"{figures['macro_precision']:.2f} recall {figures['macro_recall']:.2f}"
        )
    for name in [n for n in argv if n != "crux_type"] if argv else list(specs):
        data = fit(name, specs[name], backend)
        (OUT / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        card = data["card"]
        print(
            f"{name}: n={card['n']} positives={card['positives']} threshold={data['threshold']} "
            f"cv precision {card['cross_validated_on_dev']['precision']:.2f} "
            f"recall {card['cross_validated_on_dev']['recall']:.2f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
