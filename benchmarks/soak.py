"""A soak: every shipped workload, run as a user runs it, looking for the next crash.

    .venv/bin/python benchmarks/soak.py [--subset full|ci] [--turns N] [--timeout S] [--jobs N]

Each job is one ``loom-sim`` command in its own process, on the embedded model (no key, no
network), with no response cache (every reply is the model's):

* every shipped example config (``configs/examples/*.yaml``) x 3 seeds x 2 rollouts;
* a 2-target matrix (the embedded model and its Q4_1 file, side by side);
* every debate deck at 2 seeds, on the embedded model;
* every shipped harness pack (the studio's, ``sqlite_notes``, ``llm_chat``) on its own targets.

A job's outcome is one of:

* ``ok`` — it ended with its report;
* ``internal error`` — loom-sim said so, died by a signal (a crash in llama.cpp, say), or
  printed a traceback;
* ``hang`` — no end within ``--timeout`` seconds (then it is killed);
* ``lost turns`` — a rollout's ``turns.jsonl`` holds fewer turns than its transcript says
  were played, or a finished rollout fewer than were asked for with no stop reason recorded;
* ``failed`` — any other non-zero exit (a clear error the user could act on; printed).

``--jobs N`` runs N jobs at a time, each model given its share of the cores
(``LOOM_SIM_THREADS``: cores / N), so the machine's cores are all used without two models'
threads spinning against each other. It prints a line per job, in order, and the counts; it
exits 1 if any job had an internal error, a hang or lost turns. ``--subset ci`` is the part the
slow test suite runs within CI's budget (the crash that multi-rollout embedded runs hit in
scoring, and a 2-target matrix of 2 turns: the two models loaded in one run, each rollout
scored and the matrix reported; the full soak runs it at ``--turns``).

"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS  # noqa: E402

LOOM_SIM = str(ROOT / ".venv" / "bin" / "loom-sim")
EMBEDDED = "local/smollm2"


@dataclass
class Job:
    name: str
    args: list[str]
    kind: str  # run | matrix | debate | harness
    turns: int | None = None  # asked of each rollout (run, matrix)
    outcome: str = ""
    detail: str = ""
    seconds: float = 0.0
    folder: Path = field(default_factory=Path)


def _second_file() -> str:
    """The embedded model's other shipped quantisation, as a second target of a matrix."""
    from loom_sim.models.gguf import embedded_model_path

    return f"local/{embedded_model_path()}"


def jobs(subset: str, turns: int) -> list[Job]:
    found: list[Job] = []
    if subset == "ci":
        found.append(Job("run student_persona x2 seed 5", ["run",
            "configs/examples/student_persona.yaml", "--turns", "8", "--rollouts", "2",
            "--seed", "5"], "run", 8))  # fmt: skip
        found.append(Job("matrix 2 targets", ["run", "configs/examples/mania_patient.yaml",
            "--target", EMBEDDED, "--target", _second_file(), "--turns", "2",
            "--seed", "2"], "matrix", 2))  # fmt: skip
        return found
    for config in sorted((ROOT / "configs" / "examples").glob("*.yaml")):
        for seed in (1, 2, 3):
            found.append(Job(f"run {config.stem} seed {seed}", ["run", str(config), "--turns",
                str(turns), "--rollouts", "2", "--seed", str(seed)], "run", turns))  # fmt: skip
    found.append(Job("matrix 2 targets", ["run", "configs/examples/mania_patient.yaml",
        "--target", EMBEDDED, "--target", _second_file(), "--turns", str(turns),
        "--seed", "2"], "matrix", turns))  # fmt: skip
    for deck in sorted((ROOT / "configs" / "decks").glob("*.yaml")):
        for seed in (1, 2):
            found.append(Job(f"debate {deck.stem} seed {seed}", ["debate", deck.stem, "--seed",
                str(seed), "-n", "8", "--model", f"cheap={EMBEDDED}", "--model",
                f"strong={EMBEDDED}"], "debate"))  # fmt: skip
    for pack in ("studio_benchmarks", "sqlite_notes", "llm_chat"):
        found.append(Job(f"harness {pack}", ["harness", "run", pack, "--seed", "1",
            "--max-turns", "3"], "harness"))  # fmt: skip
    return found


def run(job: Job, out: Path, timeout: float, threads: int | None = None) -> Job:
    job.folder = out
    env = {**os.environ, "LOOM_SIM_CACHE_DIR": str(out.parent / f".cache-{out.name}")}
    if threads is not None:
        env["LOOM_SIM_THREADS"] = str(threads)
    env.pop("LOOM_SIM_DEBUG", None)
    args = [LOOM_SIM, *job.args, "-o", str(out)]
    if job.kind in ("run", "matrix"):
        args.append("--no-cache")
    started = time.monotonic()
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        job.outcome, job.detail = "hang", f"no end after {timeout:.0f} s"
        job.seconds = time.monotonic() - started
        return job
    job.seconds = time.monotonic() - started
    text = stdout + stderr
    if process.returncode < 0:
        job.outcome = "internal error"
        job.detail = (
            f"killed by signal {-process.returncode} ({signal.Signals(-process.returncode).name})"
        )
    elif "internal error" in text or "Traceback" in text:
        job.outcome = "internal error"
        job.detail = next(
            (line for line in text.splitlines() if "internal error" in line or "Error" in line),
            text[-300:],
        )[:400]
    else:
        lost = lost_turns(out, job.turns) if job.kind in ("run", "matrix") else []
        if lost:
            job.outcome, job.detail = "lost turns", "; ".join(lost)
        elif process.returncode != 0:
            job.outcome, job.detail = "failed", stderr.strip().splitlines()[-1][:400]
        elif not any(out.rglob("report.*")):
            job.outcome, job.detail = "failed", "no report written"
        else:
            job.outcome = "ok"
    return job


def lost_turns(folder: Path, asked: int | None) -> list[str]:
    """What a run's rollouts lost: turns played (per its transcript) but not on disk, or a
    finished rollout short of the turns asked with no stop reason."""
    problems = []
    for turns_file in sorted(folder.rglob("turns.jsonl")):
        rollout = turns_file.parent
        on_disk = sum(1 for line in turns_file.read_text().splitlines() if line.strip())
        transcript = rollout / "transcript.json"
        if not transcript.is_file():
            problems.append(f"{rollout.relative_to(folder)}: no transcript")
            continue
        data = json.loads(transcript.read_text())
        played = len(data.get("turns") or [])
        if on_disk < played:
            problems.append(f"{rollout.relative_to(folder)}: {played} played, {on_disk} on disk")
        if (
            asked is not None
            and data.get("status") == "done"
            and played < asked
            and not data.get("stop_reason")
        ):
            problems.append(f"{rollout.relative_to(folder)}: {played} of {asked}, no reason")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", choices=("full", "ci"), default="full")
    parser.add_argument("--turns", type=int, default=6, help="turns of each rollout (full)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds a job may take")
    parser.add_argument("--only", help="run only the jobs whose name contains this")
    parser.add_argument("--jobs", type=int, default=1, help="jobs at a time (default 1)")
    args = parser.parse_args()
    base = RESULTS / f"soak-{time.strftime('%Y%m%dT%H%M%S')}"
    todo = [j for j in jobs(args.subset, args.turns) if not args.only or args.only in j.name]
    counts: dict[str, int] = {}
    started = time.monotonic()
    parallel = max(1, args.jobs)
    threads = max(1, len(os.sched_getaffinity(0)) // parallel) if parallel > 1 else None

    def one(item: tuple[int, Job]) -> Job:
        index, job = item
        return run(job, base / f"{index:02d}", args.timeout, threads)

    with ThreadPoolExecutor(max_workers=parallel) as pool:  # each job is its own process
        for job in pool.map(one, enumerate(todo)):
            counts[job.outcome] = counts.get(job.outcome, 0) + 1
            tail = f" — {job.detail}" if job.detail else ""
            print(f"{job.outcome:>14}  {job.seconds:6.0f} s  {job.name}{tail}", flush=True)
    bad = sum(counts.get(k, 0) for k in ("internal error", "hang", "lost turns"))
    print(
        f"{len(todo)} jobs in {(time.monotonic() - started) / 60:.1f} min: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"; internal errors {counts.get('internal error', 0)}, hangs {counts.get('hang', 0)},"
        f" lost turns {counts.get('lost turns', 0)}; folders in {base}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
