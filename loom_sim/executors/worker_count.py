"""How many worker processes a run gets when ``--workers auto`` leaves it to loom-sim.

A run whose models are all remote (an HTTP API) or scripted spends its CPU on loom-sim's own
work — prompts, monitors, records — one core per process: it gets a worker per core this
process may use (its affinity mask, :func:`loom_sim.cpu.cores`), as many as memory holds.
Each such worker is counted as :data:`WORKER_BASE_BYTES` (Python, loom-sim, the embedding
model and its rollouts' state: measured, a worker running 4 scripted rollouts with the
embedding model peaks at 240 MB).

A run whose models are all scripted (no server to wait on, nothing to load) is over in a
moment unless it is large: a worker's start-up (~1 s of a core: Python, loom-sim, the
embedding model) is worth paying once per :data:`SCRIPTED_CELLS_PER_WORKER` rollouts (a
scripted turn is ~1-2 ms of loom-sim's own work, so 64 rollouts of 10 turns are about a
second), so such a run gets a worker per that many rollouts, at least one.

A run with an in-process model (the embedded llama.cpp model, a GGUF file) is different: one
process already keeps every core busy through llama.cpp's threads, and each worker loads its
own copy of the model. So it gets more than one worker only where memory holds them all:
each worker is counted as :data:`IN_PROCESS_WORKER_BYTES` (the embedded quickstart peaks
under 1 GB in one process) plus twice its model files (the weights, and as much again for
contexts and kept prompt states). Where the system does not say what memory is available, it
gets one. (Measured on 2 cores: 2 rollouts of the embedded model, 49 s in one process, 25 s
on two workers; a process generates one reply at a time, so workers add replies in parallel.)

The workers may take :data:`MEMORY_SHARE` of the memory available now (``MemAvailable``).
Whatever the count, they share the cores: each loads its models (llama.cpp, and ONNX Runtime
for the embedding model) with ``cores / workers`` threads (``LOOM_SIM_THREADS``, unless that
is set), so N workers do not start N times the threads the machine has.

Never more workers than cells to run, than ``--concurrency`` (each worker runs at least one
rollout at a time), or than the smallest limit of an HTTP provider the run calls (each worker
holds at least one of its slots, and the limit is the account's, shared between workers).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from loom_sim import cpu
from loom_sim.errors import LoomError
from loom_sim.models.gguf import resolve_local_path
from loom_sim.models.providers import PROVIDERS
from loom_sim.rollout.runtime.cells import Cell

__all__ = [
    "IN_PROCESS_WORKER_BYTES",
    "MEMORY_SHARE",
    "SCRIPTED_CELLS_PER_WORKER",
    "WORKER_BASE_BYTES",
    "available_memory",
    "by_memory",
    "choose_workers",
    "in_process_models",
    "threads_per_worker",
]

WORKER_BASE_BYTES = 512 * 1024**2
IN_PROCESS_WORKER_BYTES = 1024**3
MEMORY_SHARE = 0.8
SCRIPTED_CELLS_PER_WORKER = 64
MEMINFO = Path("/proc/meminfo")


def _providers(cells: Iterable[Cell]) -> set[str]:
    plans = {id(c.plan): c.plan for c in cells}.values()
    return {spec.split("/", 1)[0] for plan in plans for spec in plan.models.values()}


def _scripted_only(cells: Iterable[Cell]) -> bool:
    """Whether every model of the cells answers at once: no server, no in-process weights
    (a provider that is neither HTTP nor one-call-at-a-time, like ``scripted``)."""
    found = _providers(cells)
    return bool(found) and all(
        p in PROVIDERS and not PROVIDERS.get(p).http and PROVIDERS.get(p).parallel for p in found
    )


def in_process_models(cells: Iterable[Cell]) -> list[str]:
    """The specs of the cells' models that run in this process (llama.cpp), each once."""
    plans = {id(c.plan): c.plan for c in cells}.values()
    specs = dict.fromkeys(spec for plan in plans for spec in plan.models.values())
    return [
        spec
        for spec in specs
        if spec.split("/", 1)[0] in PROVIDERS and not PROVIDERS.get(spec.split("/", 1)[0]).parallel
    ]


def available_memory() -> int | None:
    """Bytes of memory available now (``MemAvailable``), or None where the system does not
    say."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        return None
    return None


def by_memory(per_worker: int, available: int | None) -> int | None:
    """Workers of ``per_worker`` bytes that fit in the share of ``available`` bytes (at least
    one); None where the system does not say."""
    if available is None:
        return None
    return max(1, int(available * MEMORY_SHARE) // per_worker)


def _model_bytes(specs: list[str]) -> int:
    total = 0
    for spec in specs:
        try:
            total += resolve_local_path(spec).stat().st_size
        except (OSError, LoomError):  # a missing file is said where the model is checked
            continue
    return total


def choose_workers(
    asked: int | None, cells: list[Cell], concurrency: int, limits: dict[str, int]
) -> int:
    """The workers for ``cells`` (those still to run): ``asked`` (None: the rule above),
    bounded by the cells, ``concurrency`` and the HTTP providers' ``limits``."""
    if asked is None:
        local = in_process_models(cells)
        if local:
            fit = by_memory(IN_PROCESS_WORKER_BYTES + 2 * _model_bytes(local), available_memory())
            asked = min(cpu.cores(), fit or 1)
        else:
            fit = by_memory(WORKER_BASE_BYTES, available_memory())
            asked = min(cpu.cores(), fit or cpu.cores())
            if _scripted_only(cells):
                asked = min(asked, max(1, len(cells) // SCRIPTED_CELLS_PER_WORKER))
    http = [
        limits[p]
        for p in _providers(cells)
        if p in PROVIDERS and PROVIDERS.get(p).http and p in limits
    ]
    return max(1, min(asked, len(cells), concurrency, *http))


def threads_per_worker(workers: int) -> int:
    """The threads each worker's in-process models use, the cores shared between workers."""
    return max(1, cpu.cores() // max(1, workers))
