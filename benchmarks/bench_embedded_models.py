"""Which model should be the embedded default: candidates measured on the same tasks.

    .venv/bin/python benchmarks/bench_embedded_models.py [--model SPEC ...] [--repeats 3]
        [--transcripts quick|all] [--no-judge]

Each ``--model`` is ``local/smollm2`` (the default) or ``local/<path.gguf>`` (an absolute path:
``local//models/x.gguf``). Per model:

- **what it is**: the file's own metadata — its name, whether it carries a chat template (an
  instruction-tuned model does; a pretrained base model has none), its licence field, size;
- **chat**: six plain questions at temperature 0 through llama.cpp's chat completion; the share
  answered with any text at all, and tokens per second on this machine (generated tokens over
  the call's wall time, prompt included; median over questions and ``--repeats``);
- **judge**: psychosis-bench's shared pattern_decoder transcripts imported and scored by loom-sim
  with this model as the judge (``loom-sim score --judge-model SPEC``), then compared with
  psychosis-bench's own judge turn by turn: exact agreement and linearly weighted kappa for DCS,
  HES and SIS, pooled over the transcripts; and the share of judge answers that were usable
  JSON (a failed judgement is one that stayed unusable after its retries).

A model that answers fewer than half the chat questions is not asked to judge (its row says so):
a rubric is a chat prompt. Debate turns on the embedded model have their own benchmark
(bench_debate_embedded.py). The judge part is slow on 2 cores (minutes per transcript); the
chat part takes seconds. Agreement and usable shares do not depend on the machine's load;
tokens per second do.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOM_SIM = Path(sys.executable).parent / "loom-sim"
RESULTS = ROOT / "tests" / "data" / "psychosis-bench-2.0" / "results"
TRANSCRIPTS = {
    # complete transcripts whose reference scores vary (Claude's differ most from the GPTs')
    "quick": [
        "run_20260126_095844_claude_sonnet_4/claude_sonnet_4_20250514_pattern_decoder.json",
        "gpt_4o_pattern_decoder_20260125_174011.json",
    ],
    "all": [
        "run_20260126_095844_claude_sonnet_4/claude_sonnet_4_20250514_pattern_decoder.json",
        "gpt_4o_pattern_decoder_20260125_174011.json",
        "gpt_4o_pattern_decoder_20260125_170052.json",
        "gpt_4.1_pattern_decoder_20260126_061946.json",
    ],
}
QUESTIONS = [
    "Name three things to pack for a one-night hike.",
    "What can I use instead of eggs in pancakes?",
    "In one sentence: why is the sky blue?",
    "Is it safe to stop taking prescribed medication without asking a doctor? Answer briefly.",
    "Write one friendly sentence welcoming a new colleague.",
    "What is 12 times 7?",
]
SAFETY = ("dcs", "hes", "sis")


def model_path(spec: str) -> Path:
    from loom_sim.models.gguf import resolve_local_path

    return resolve_local_path(spec)


def identity(llama) -> dict:  # type: ignore[no-untyped-def]
    meta = llama.metadata
    return {
        "name": meta.get("general.name", "?"),
        "chat_template": "tokenizer.chat_template" in meta,
        "licence": meta.get("general.license", "?"),
        "size": meta.get("general.size_label", "?"),
    }


def chat(spec: str, repeats: int) -> dict:
    from llama_cpp import Llama

    llama = Llama(model_path=str(model_path(spec)), n_ctx=2048, verbose=False, seed=1)
    rates, answered = [], 0
    for _ in range(repeats):
        answered = 0
        for question in QUESTIONS:
            start = time.perf_counter()
            reply = llama.create_chat_completion(
                [{"role": "user", "content": question}], max_tokens=64, temperature=0.0, seed=1
            )
            took = time.perf_counter() - start
            text = reply["choices"][0]["message"]["content"] or ""
            answered += bool(text.strip())
            if reply["usage"]["completion_tokens"]:
                rates.append(reply["usage"]["completion_tokens"] / took)
    return {
        **identity(llama),
        "answered": answered / len(QUESTIONS),
        "tokens_per_s": statistics.median(rates) if rates else 0.0,
    }


def judge(spec: str, transcripts: list[str]) -> dict:
    """Import, score with ``spec`` as the judge, and pool the agreement with the reference."""
    from loom_sim.plugins.scorers import SCORERS
    from loom_sim.rollout.report.data import load_transcript
    from loom_sim.rollout.scoring.agreement import agreement

    with tempfile.TemporaryDirectory(dir=ROOT / "results") as tmp:
        run = Path(tmp) / "run"
        files = [str(RESULTS / name) for name in transcripts]
        step = [str(LOOM_SIM), "import", "psychosis-bench", *files, "-o", str(run)]
        subprocess.run(step, check=True, capture_output=True, text=True)
        start = time.perf_counter()
        scored = subprocess.run(
            [str(LOOM_SIM), "score", str(run), "--judge-model", spec, "--no-cache"],
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - start
        if scored.returncode != 0:
            return {"error": (scored.stderr or scored.stdout).strip().splitlines()[-1]}
        pairs: dict[str, list] = {name: [] for name in SAFETY}
        judged = failed = 0
        for folder in sorted(run.glob("rollout_*")):
            transcript = load_transcript(folder / "transcript.json")
            for record in transcript.turns:
                for score in record.scores.values():
                    judged += score.state in ("scored", "failed")
                    failed += score.state == "failed"
                for name in SAFETY:
                    theirs, ours = record.reference.get(name), record.scores.get(name)
                    if theirs and ours and theirs.value is not None and ours.value is not None:
                        pairs[name].append((record.turn + 1, theirs.value, ours.value))
        out: dict = {"usable": 1 - failed / judged if judged else None, "score_s": took}
        for name in SAFETY:
            found = agreement(name, pairs[name], SCORERS.get(name).scale)
            out[name] = {"pairs": found.pairs, "exact": found.exact, "kappa": found.kappa}
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="local/smollm2 or local/<path.gguf>")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--transcripts", choices=list(TRANSCRIPTS), default="quick")
    parser.add_argument("--no-judge", action="store_true", help="the chat part only (seconds)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rows = {}
    for spec in args.model or ["local/smollm2"]:
        row = chat(spec, args.repeats)
        if args.no_judge:
            row["judge"] = {"skipped": "--no-judge"}
        elif row["answered"] >= 0.5:
            row["judge"] = judge(spec, TRANSCRIPTS[args.transcripts])
        else:
            row["judge"] = {"skipped": "answers fewer than half of plain questions"}
        rows[spec] = row
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{len(QUESTIONS)} questions x {args.repeats}; judge on {args.transcripts} "
        f"({len(TRANSCRIPTS[args.transcripts])} shared psychosis-bench transcripts)"
    )
    head = "| model | name | chat template | licence | answered | tok/s | usable JSON |"
    print(head + " DCS exact / κ | HES exact / κ | SIS exact / κ |")
    print("|" + " --- |" * 10)
    for spec, row in rows.items():
        j = row["judge"]

        def pair(name: str, j: dict = j) -> str:
            if name not in j:
                return "—"
            a = j[name]
            exact = "—" if a["exact"] is None else f"{a['exact']:.0%}"
            kappa = "—" if a["kappa"] is None else f"{a['kappa']:.2f}"
            return f"{exact} / {kappa} (n={a['pairs']})"

        usable = j.get("usable")
        print(
            f"| {spec} | {row['name']} | {'yes' if row['chat_template'] else 'no'} "
            f"| {row['licence']} | {row['answered']:.0%} | {row['tokens_per_s']:.0f} "
            f"| {'—' if usable is None else f'{usable:.0%}'} "
            f"| {pair('dcs')} | {pair('hes')} | {pair('sis')} |"
        )
        for note in ("skipped", "error"):
            if note in j:
                print(f"  {spec}: judge {note}: {j[note]}")


if __name__ == "__main__":
    main()
