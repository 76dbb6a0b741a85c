"""Shared fixtures for the config tests."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "configs" / "examples"
MANIA_PATH = EXAMPLES_DIR / "mania_patient.yaml"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests need SIGINT to arrive. A test run started in the background by a
    non-interactive shell (a CI script's ``cmd &``) inherits SIGINT *ignored*, and so would
    every program the tests start; handled here, it is back to default in those programs
    (exec resets handled signals, but keeps ignored ones ignored)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _share_the_cores()
    # ``loom-sim run`` splits its rollouts over a worker per core unless told otherwise; the
    # suite already runs a test per core, so its runs stay in one process each (as
    # ``--workers 1``), and the tests of the worker processes ask for them by flag.
    os.environ.setdefault("LOOM_SIM_WORKERS", "1")


def _share_the_cores() -> None:
    """Under ``-n N``, each worker (and every program it starts) gives the embedded model its
    share of the cores, fixed. Sampled at each model's load (``loom_sim.cpu``), the count saw
    an idle machine whenever the other worker was between tests, took every core, and two
    models then spun their threads against each other on 2 cores: a 12-message debate that
    takes a minute took ten. A ``LOOM_SIM_THREADS`` already set wins."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers and not os.environ.get("LOOM_SIM_THREADS"):
        cores = len(os.sched_getaffinity(0))
        os.environ["LOOM_SIM_THREADS"] = str(max(1, cores // max(1, int(workers))))


#: The longest tests (minutes each on the embedded model), longest first, started before all
#: others.
LONGEST = ("test_soak.py", "test_debate_embedded_decks.py", "test_real_models.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first, then the other slow ones, then the rest, each group in its
    collected order. xdist hands tests out in this order, two at a time to each worker
    (``--maxschedchunk 2`` in pyproject.toml; by default the first worker got the first eighth
    of the suite at once, every long test with it). In alphabetical order the soak came last
    and ran for ten minutes on one worker while the other sat idle; started first, and the
    long ones spread over the workers, they run beside the short tests."""

    def rank(item: pytest.Item) -> int:
        if item.path.name in LONGEST:
            return LONGEST.index(item.path.name)
        return len(LONGEST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)  # stable: within a group, the collected order


#: Most workers the suite runs on (``-n auto`` in pyproject.toml): one per core this process
#: may use, at most this many. A worker driving the embedded model holds up to ~1.5 GB.
MOST_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """The cores this process may run on (not the machine's: a CI runner's affinity mask),
    capped; the embedded model's threads adapt to the other workers (``loom_sim.cpu``)."""
    return max(1, min(len(os.sched_getaffinity(0)), MOST_WORKERS))


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES_DIR


@pytest.fixture
def mania_path() -> Path:
    return MANIA_PATH


@pytest.fixture
def mania_text() -> str:
    return MANIA_PATH.read_text(encoding="utf-8")


@pytest.fixture
def mania_data(mania_text: str) -> dict[str, Any]:
    return yaml.safe_load(mania_text)


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """``write_config(text_or_dict, name="config.yaml") -> Path`` under tmp_path."""

    def write(content: str | bytes | dict[str, Any] | list[Any], name: str = "config.yaml") -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(
                yaml.safe_dump(content, sort_keys=False, allow_unicode=True), encoding="utf-8"
            )
        return path

    return write


@pytest.fixture(autouse=True)
def _own_response_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own response cache: `run` and `score` cache model replies by
    default, and no test may read another's replies or write to the user's cache folder."""
    monkeypatch.setenv("LOOM_SIM_CACHE_DIR", str(tmp_path_factory.mktemp("response-cache")))
