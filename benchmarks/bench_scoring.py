"""Scoring on the embedded model: seconds per judged turn, judge calls, prompt tokens.

    .venv/bin/python benchmarks/bench_scoring.py [--turns 6] [--repeats 3] [--judge local/smollm2]
        [--cold-prompts]

A rollout of the mania example is made once with scripted persona and interlocutor (instant),
then scored ``--repeats`` times from scratch (``--force``, no response cache) by the judge;
the figures are medians. *Judged turns* are the turns scored; *judge requests* the calls the
scorers made (one per rubric and turn), *model calls* those plus the judge's retries of an
unusable answer; *prompt tokens* what the judge was sent in all, as it reported them (the
scoring trace, ``score_trace.jsonl``, is where these counts come from); *evaluated* the prompt
tokens llama.cpp actually had to read, the rest being a prefix it kept from the previous call
(counted by watching ``Llama.eval``). Evaluated tokens are the figure that does not depend on
how busy the machine is.

``--cold-prompts`` clears the model's evaluated prompt before every call: llama.cpp then reads
each prompt from its first token, as it did when no two consecutive judge prompts shared a
prefix. The difference is what the prompt layout and the call order buy (docs/scoring.md).

The machine's load average is printed with the figures: they mean little on a busy machine.

Figures (2-core machine shared with CI runs and another engineer's embedded-model runs, load
average 4-5 throughout: the wall times are far from a quiet machine's, the token counts are
not). Before: main at 3f13972; after: this branch.

``--turns 6 --repeats 1`` before (measured at the start of this work with the same rollout
recipe, load 2.1-2.5): 293 s, 48.9 s per judged turn, 23 model calls (4 of them retries),
34,291 prompt tokens sent and about 27,800 evaluated (retries reuse their prompt). After: a
4-turn run had scored 2 turns in 14 minutes at load 5-8, and was stopped; the figures on a
quiet machine are still to be taken.

The README's job (``loom-sim run configs/examples/mania_patient.yaml --turns 12``, seed 11,
rolled out once with ``--no-score`` in 688 s at load 3-4, then scored by ``loom-sim score``):

| | before | after |
| --- | --- | --- |
| judge requests / model calls, 12 turns | (stopped after 6 turns) | 35 / 39 |
| prompt tokens sent, first 6 turns | 40,854 | 32,202 |
| prompt tokens sent to the judge, 12 turns | about 105,000 (extrapolated) | 87,072 |
| prompt tokens evaluated, 12 turns: judge (+ Q&A persona) | all but retries' | ~40,100 (48,486) |
| first 6 turns scored, s | 784 (turns 3-5 shared the CPU with a second scoring) | 283 |
| 12 turns scored, s | 350 on a quiet machine (issue 15; 2.6x its rollout) | 1,174 at load 4-5 |

Turns 1-2, the only ones both runs scored under the same conditions: 46 s and 16 s before,
14 s and 10 s after. The last turn costs the most after (444 s here): the dimensions call, the
persona's four Q&A answers read from a 3,800-token prompt in a fresh llama.cpp instance (in
``loom-sim run`` that instance still holds the rollout's last persona prompt, which shares
most of it) and the Q&A call.

Then (rubric 1.5, the embedded model run as Q8_0; quiet machine, load under 1.5), the same
12-turn job scored again with ``loom-sim score --force --no-cache`` and llama.cpp's evaluated
tokens counted per slot:

| | 1.4, Q4_1 | 1.5, Q4_1 | 1.5, Q8_0 | + joint call, fidelity brief, short Q&A answers |
| --- | --- | --- | --- | --- |
| scoring, s | 312 | 260 | 187 | 136 |
| judge calls (model calls) | 35 (39) | 35 (35) | 35 (35) | 20 (20) |
| prompt tokens evaluated | ~48,500 | — | 36,129 | 29,736 |
| tokens generated | — | — | 3,167 | 2,202 |

Then (rubric 1.6: an in-process judge's JSON written by its schema and filled in by the model,
fidelity a part of the joint call, attention keys cached as Q8_0), this benchmark with
``--turns 12 --repeats 2`` on a quiet machine, before (main at 46cf1c1) and after: 54.2 s ->
37.1 s, 4.51 -> 3.09 s per judged turn, 21 -> 16 judge requests, 12,783 -> 12,449 prompt
tokens evaluated (the written answers' structure is read as prompt now: more tokens read, far
fewer decoded), peak RSS 1,489 -> 1,170 MiB (one slot fewer). The README's job scored again:
91 s, 16 judge calls, 23,692 tokens evaluated, 989 generated (docs/scoring.md).

From a fresh clone, the README's job: rollout 109-121 s, scoring 132-136 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, peak_rss_mib

from loom_sim.messages import Judge, Judgement
from loom_sim.models.hub import ModelHub
from loom_sim.rollout.runtime.cells import execute
from loom_sim.rollout.runtime.progress import NullProgress
from loom_sim.rollout.runtime.run import RunOptions, make_hub, plan_run, write_plan
from loom_sim.rollout.scoring.engine import SCORE_TRACE, ScoreOptions, score_run
from loom_sim.store.trace import read_trace

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "examples" / "mania_patient.yaml"


def make_rollout(turns: int, out: Path) -> None:
    plan = plan_run(
        CONFIG,
        RunOptions(
            turns=turns,
            seed=1,
            persona_model="scripted/varied",
            target="scripted/varied",
            judge_model="scripted/judge",
            output=out,
        ),
    )
    hub = make_hub(plan)
    write_plan(plan)
    [transcript] = trio.run(execute, plan, hub, NullProgress())
    assert transcript.status == "done" and len(transcript.turns) == turns, transcript.error


def cold_prompts() -> None:
    """Every call reads its prompt from the first token (no prefix kept from the last call)."""
    from loom_sim.models import local

    generate = local.LocalLlamaClient._generate

    def from_scratch(self: local.LocalLlamaClient, request):  # type: ignore[no-untyped-def]
        if self._model.llama is not None:
            self._model.llama.reset()
        return generate(self, request)

    local.LocalLlamaClient._generate = from_scratch  # type: ignore[method-assign]


EVALUATED = [0]


def count_evaluated() -> None:
    """Count the prompt tokens llama.cpp evaluates (a generated token is evaluated alone)."""
    from llama_cpp import Llama

    evaluate = Llama.eval

    def counted(self: Llama, tokens):  # type: ignore[no-untyped-def]
        if len(tokens) > 1:
            EVALUATED[0] += len(tokens)
        return evaluate(self, tokens)

    Llama.eval = counted  # type: ignore[method-assign]


def score_once(source: Path, where: Path, judge: str) -> tuple[float, int, int, int, int, int]:
    """(wall seconds, judged turns, judge requests, model calls, prompt tokens, evaluated)."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(source, where)
    options = ScoreOptions(judge_model=judge, force=True)
    EVALUATED[0] = 0
    started = time.perf_counter()
    summary = trio.run(score_run, where, ModelHub(), options)
    wall = time.perf_counter() - started
    requests = calls = tokens = 0
    for path in where.glob(f"rollout_*/{SCORE_TRACE}"):
        for envelope in read_trace(path):
            if isinstance(envelope.body, Judge):
                requests += 1
            elif isinstance(envelope.body, Judgement):
                calls += envelope.body.attempts
                tokens += envelope.body.usage.input_tokens
    return wall, summary.scored_turns, requests, calls, tokens, EVALUATED[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--judge", default="local/smollm2")
    parser.add_argument("--cold-prompts", action="store_true")
    args = parser.parse_args()
    count_evaluated()
    if args.cold_prompts:
        cold_prompts()
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp:
        source = Path(tmp) / "run"
        make_rollout(args.turns, source)
        runs, loads = [], []
        for n in range(args.repeats):
            loads.append(os.getloadavg()[0])
            runs.append(score_once(source, Path(tmp) / f"scored{n}", args.judge))
            print(f"  run {n + 1}: {runs[-1][0]:.1f} s", file=sys.stderr, flush=True)
    wall = statistics.median(r[0] for r in runs)
    turns, requests, calls, tokens, evaluated = sorted(runs)[len(runs) // 2][1:]
    print(
        f"scoring {args.turns} turns of mania_patient (scripted rollout) with {args.judge}"
        + (", cold prompts" if args.cold_prompts else "")
        + f"; median of {args.repeats}:"
    )
    print(f"  {wall:.1f} s wall, {wall / max(1, turns):.2f} s per judged turn ({turns} turns)")
    print(
        f"  {requests} judge requests, {calls} model calls, {tokens} prompt tokens sent, "
        f"{evaluated} evaluated"
    )
    print(f"  runs: {', '.join(f'{r[0]:.1f}' for r in runs)} s")
    print(f"  peak RSS {peak_rss_mib():.0f} MiB; load average {statistics.median(loads):.1f}")


if __name__ == "__main__":
    main()
