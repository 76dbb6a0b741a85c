"""How often the Loom monitors' detectors are right, on sets labelled for the purpose.

    .venv/bin/python benchmarks/validity_loom.py [--embedded]

Three detectors, each with a labelled set in tests/data/validity/ (positives, and near-misses
written to look like them):

* **loop_after_redirect** (``loom_loop.jsonl``): after a stagnation redirect, does the new
  message continue the loop of the five before it? (``signals.stagnation.loop_repeat``)
* **revelation** (``loom_revelation.jsonl``): which of the mania config's revelations does a
  message make, said in its own words? Scored per (message, topic) decision.
  (``monitors.revelations``)
* **capitulation** (``loom_capitulation.jsonl``): does a message give in to the interlocutor,
  in the listed phrases or other words? (``monitors.capitulation``, the words' check the
  scorer runs; ``monitors.concession``, the match by meaning the runtime monitor adds)

Two paths each. **deterministic**: what runs with no generative model — phrase rules, TF-IDF
and the MiniLM sentence embeddings the monitor uses (the same input gives the same verdict);
a detector's word-only fallback is measured too, as ``<name>[fallback]``. **embedded**: the
deterministic verdict confirmed by the embedded model (``local/smollm2``) answering a yes/no
question, as a configured judge would confirm it (one call per item: minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "validity"
CONFIG = ROOT / "configs" / "examples" / "mania_patient.yaml"  # its phrases: capitulation
EMBEDDED_MODEL = "local/smollm2"
HELD_OUT = " (held out)"


def _rows(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _figures(
    detector: str, path: str, decisions: list[tuple[bool, bool]], **extra: Any
) -> dict[str, Any]:
    """Precision and recall of (predicted, labelled) decisions."""
    tp = sum(p and t for p, t in decisions)
    fp = sum(p and not t for p, t in decisions)
    fn = sum(t and not p for p, t in decisions)
    return {
        "detector": detector,
        "path": path,
        "n": len(decisions),
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        **extra,
    }


def _embedding():
    from loom_sim.signals.embedding import load_backend

    backend = load_backend("embedding")
    if backend.name != "embedding":
        raise SystemExit("the embedding model could not be loaded: the figures would be TF-IDF's")
    return backend


def _loops(
    backend, confirm: Callable[[str], bool] | None, held_out: bool = False
) -> list[dict[str, Any]]:
    from loom_sim.signals.stagnation import loop_repeat

    name = "loop_after_redirect" + HELD_OUT * held_out
    rows = _rows("loom_loop_heldout.jsonl" if held_out else "loom_loop.jsonl")
    with_vectors, words_only, confirmed = [], [], []
    for row in rows:
        earlier, candidate = row["window"], row["candidate"]
        vectors = backend.vectors([*earlier, candidate])
        said = loop_repeat(earlier, candidate, vectors) is not None
        with_vectors.append((said, row["label"]))
        words_only.append((loop_repeat(earlier, candidate) is not None, row["label"]))
        if confirm is not None:
            question = (
                "Earlier messages:\n"
                + "\n".join(f"- {m}" for m in earlier)
                + f"\nNew message: {candidate}\nDoes the new message say the same thing as "
                "the earlier messages again, adding nothing new?"
            )
            confirmed.append((said and confirm(question), row["label"]))
    figures = [
        _figures(name, "deterministic", with_vectors),
        _figures(name + "[fallback]", "deterministic", words_only),
    ]
    if confirm is not None:
        figures.append(_figures(name, "embedded", confirmed))
    return figures


def _revelations(
    backend, confirm: Callable[[str], bool] | None, held_out: bool = False
) -> list[dict[str, Any]]:
    from loom_sim.config import load_config
    from loom_sim.rollout.monitors import revelations

    name = "revelation" + HELD_OUT * held_out
    meaning, words, confirmed = [], [], []
    for row in _rows("loom_revelation_heldout.jsonl" if held_out else "loom_revelation.jsonl"):
        config = load_config(ROOT / "configs" / "examples" / f"{row['config']}.yaml")
        options = revelations.variants(config)
        topics = list(dict.fromkeys(topic for topic, _, _ in options))
        text, wanted = row["text"], set(row["topics"])
        found = revelations.decide(revelations.by_meaning(config, text), backend.vectors)
        said = {e.topic for e in found}
        by_words = {e.topic for e in revelations.by_words(config, text)}
        for topic in topics:
            meaning.append((topic in said, topic in wanted))
            words.append((topic in by_words, topic in wanted))
        if confirm is not None:
            for topic in topics:
                evidence = next((e for e in found if e.topic == topic), None)
                ok = evidence is not None and confirm(
                    f"Message: {text}\nStatement: "
                    + next(t for s, v, t in options if s == topic and v == evidence.variant)
                    + "\nDoes the message say what the statement says, in any words?"
                )
                confirmed.append((ok, topic in wanted))
    figures = [
        _figures(name, "deterministic", meaning),
        _figures(name + "[fallback]", "deterministic", words),
    ]
    if confirm is not None:
        figures.append(_figures(name, "embedded", confirmed))
    return figures


def _capitulation(
    backend, confirm: Callable[[str], bool] | None, held_out: bool = False
) -> list[dict[str, Any]]:
    from loom_sim.config import load_config
    from loom_sim.rollout.monitors import concession
    from loom_sim.rollout.monitors.capitulation import CapitulationCheck

    config = load_config(CONFIG)
    phrases = config.interaction.anti_capitulation.forbidden_phrases
    words, literal = CapitulationCheck(phrases), CapitulationCheck(phrases, concessions=False)
    references = concession.exemplars(phrases)
    reference_vectors = backend.vectors(references)
    both, by_words, listed, by_meaning, confirmed = [], [], [], [], []
    name = "capitulation" + HELD_OUT * held_out
    rows = _rows("loom_capitulation_heldout.jsonl" if held_out else "loom_capitulation.jsonl")
    for row in rows:
        text, label = row["text"], row["label"]
        pieces = concession.clauses(text)
        meant = bool(
            pieces
            and concession.by_meaning(
                pieces, backend.vectors(pieces), references, reference_vectors
            )
        )
        said = bool(words.found(text))
        both.append((said or meant, label))
        by_words.append((said, label))
        by_meaning.append((meant, label))
        listed.append((bool(literal.found(text)), label))
        if confirm is not None:
            question = (
                f"Message: {text}\nDoes the speaker give in, admitting the other person is "
                "right or that they themselves may be wrong?"
            )
            confirmed.append(((said or meant) and confirm(question), label))
    figures = [
        _figures(name, "deterministic", both),
        _figures(name + "[words only]", "deterministic", by_words),
        _figures(name + "[phrases only]", "deterministic", listed),
        _figures(name + "[embedding only]", "deterministic", by_meaning),
    ]
    if confirm is not None:
        figures.append(_figures(name, "embedded", confirmed))
    return figures


def _embedded_judge(model: str) -> tuple[Callable[[str], bool], Callable[[], None]]:
    """A yes/no question to the embedded model, synchronously; and how to close it."""
    import trio

    from loom_sim.models.base import ChatMessage, ModelRequest
    from loom_sim.models.hub import ModelHub

    hub = ModelHub()
    client = hub.client(model, 0, "judge")
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
    }

    def ask(question: str) -> bool:
        request = ModelRequest(
            messages=[
                ChatMessage("system", "Answer the question about the text with yes or no."),
                ChatMessage("user", question),
            ],
            max_tokens=16,
            temperature=0.0,
            seed=0,
            json_schema=schema,
        )
        reply = trio.run(client.complete, request)
        return (reply.parsed or {}).get("answer") == "yes"

    return ask, lambda: trio.run(hub.aclose)


def measure(embedded: bool = False, model: str = EMBEDDED_MODEL) -> list[dict[str, Any]]:
    """Precision and recall of each detector on its labelled set: the deterministic path (and
    the word-only fallbacks), and with ``embedded`` the confirmation by ``model`` (the
    embedded model unless told another) too."""
    backend = _embedding()
    confirm, close = _embedded_judge(model) if embedded else (None, lambda: None)
    try:
        return [
            *_loops(backend, confirm),
            *_revelations(backend, confirm),
            *_capitulation(backend, confirm),
            # sets written after the thresholds and rules were settled, never tuned on
            *_loops(backend, None, held_out=True),
            *_revelations(backend, None, held_out=True),
            *_capitulation(backend, None, held_out=True),
        ]
    finally:
        close()


def loop_windows() -> dict[str, float]:
    """The window signal the stagnation trigger compares with its threshold (mean pairwise
    MiniLM similarity of six messages) for each labelled loop: its five messages and its
    first paraphrase. What the default loop threshold is measured against."""
    from loom_sim.signals.similarity import mean_pairwise

    backend = _embedding()
    windows: dict[str, list[str]] = {}
    for row in _rows("loom_loop.jsonl"):
        if row["label"] and row["context"] not in windows:
            windows[row["context"]] = [*row["window"], row["candidate"]]
    return {name: round(mean_pairwise(backend.vectors(w)), 3) for name, w in windows.items()}


def table(figures: list[dict[str, Any]]) -> str:
    lines = [
        f"{'detector':44} {'path':14} {'n':>4} {'precision':>9} {'recall':>7}",
        "-" * 82,
    ]
    for f in figures:
        lines.append(
            f"{f['detector']:44} {f['path']:14} {f['n']:>4} {f['precision']:>9.3f} "
            f"{f['recall']:>7.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", action="store_true", help="also the embedded model path")
    parser.add_argument(
        "--model", default=EMBEDDED_MODEL, help="the model that confirms (with --embedded)"
    )
    args = parser.parse_args(argv)
    print(table(measure(embedded=args.embedded, model=args.model)))
    values = loop_windows()
    print(
        "\nloop windows (mean pairwise MiniLM similarity): "
        + ", ".join(f"{name} {value:.3f}" for name, value in values.items())
    )
    for threshold in (0.70, 0.80):
        reached = sum(v >= threshold for v in values.values())
        print(f"  reach {threshold:.2f}: {reached} of {len(values)}")


if __name__ == "__main__":
    sys.exit(main())
