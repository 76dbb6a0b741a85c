"""A rollout creates its files in the writer threads, never on the event loop (each creation
can cost a millisecond of kernel time, which hundreds of rollouts in step would pay one after
the other on the loop); two threads of their own, apart from trio's thread cache. A worker
process with no core to spare for them creates them on its own thread instead."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from loom_sim.config import LoomConfig, load_config
from loom_sim.store import artifacts, jsonl, trace
from loom_sim.store.writer_threads import WRITER_THREADS, in_writer_thread, write_inline
from tests.harness import run_rollout


@pytest.fixture
def mania() -> LoomConfig:
    return load_config(Path(__file__).parent.parent / "configs" / "examples" / "mania_patient.yaml")


@pytest.fixture
def created(monkeypatch) -> list[tuple[str, bool]]:
    """Each file a rollout creates or writes whole, by name, with whether the test's own thread
    (the event loop's) did it."""
    loop = threading.get_ident()
    seen: list[tuple[str, bool]] = []

    def spy(real):
        def wrapped(path, *args):
            seen.append((Path(path).name, threading.get_ident() == loop))
            return real(path, *args)

        return wrapped

    monkeypatch.setattr(jsonl, "open_for_append", spy(jsonl.open_for_append))
    monkeypatch.setattr(trace, "open_for_append", spy(trace.open_for_append))
    monkeypatch.setattr(artifacts, "write_json", spy(artifacts.write_json))
    return seen


async def test_a_rollouts_files_are_created_off_the_event_loop(tmp_path, mania, created):

    transcript, _ = await run_rollout(tmp_path, mania, 3)

    assert transcript.status == "done" and len(transcript.turns) == 3
    assert sorted(created) == [
        ("trace.jsonl", False),
        ("transcript.json", False),
        ("turns.jsonl", False),
    ]
    folder = tmp_path / "rollout_000"
    assert len((folder / "turns.jsonl").read_text().splitlines()) == 3
    on_disk = msgspec.json.decode((folder / "transcript.json").read_bytes())
    assert len(on_disk["turns"]) == 3


async def test_writes_run_in_two_threads_of_their_own():
    release = threading.Event()
    inside = 0
    most = 0
    guard = threading.Lock()
    two_in = trio.Event()
    token = trio.lowlevel.current_trio_token()

    names = set()

    def work() -> None:
        nonlocal inside, most
        names.add(threading.current_thread().name)
        with guard:
            inside += 1
            most = max(most, inside)
            if inside == WRITER_THREADS:
                trio.from_thread.run_sync(two_in.set, trio_token=token)
        release.wait()
        with guard:
            inside -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(WRITER_THREADS + 2):
            nursery.start_soon(in_writer_thread, work)
        await two_in.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert inside == WRITER_THREADS  # the others wait for a thread
        release.set()
    assert most == WRITER_THREADS == 2
    assert len(names) == 2 and all(n.startswith("loom-sim-writer") for n in names), names


async def test_the_work_s_exception_is_raised_in_the_caller_and_a_cancelled_caller_waits():
    def fail() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        await in_writer_thread(fail)
    done = threading.Event()
    proceed = threading.Event()

    def slow() -> str:
        proceed.wait()
        done.set()
        return "written"

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(in_writer_thread, slow)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
            proceed.set()
    assert done.is_set()  # the cancelled caller returned only once the work had finished


def test_a_forked_child_gets_writer_threads_of_its_own(tmp_path):
    """A child forked after the parent used its writer threads still writes (it would wait
    forever on a pool whose threads stayed in the parent)."""

    async def write(path: Path) -> None:
        await in_writer_thread(path.write_text, "written")

    trio.run(write, tmp_path / "parent")
    pid = os.fork()
    if pid == 0:  # the child: its outcome as its exit status; a hang ends it by SIGALRM
        try:
            signal.alarm(30)
            trio.run(write, tmp_path / "child")
        finally:
            os._exit(0 if (tmp_path / "child").exists() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child").read_text() == "written"


async def test_a_process_that_writes_inline_creates_a_rollouts_files_on_its_own_thread(
    tmp_path, mania, created
):
    write_inline()
    try:
        transcript, _ = await run_rollout(tmp_path, mania, 3)
    finally:
        write_inline(False)

    assert transcript.status == "done" and len(transcript.turns) == 3
    assert sorted(created) == [
        ("trace.jsonl", True),
        ("transcript.json", True),
        ("turns.jsonl", True),
    ]
    assert len((tmp_path / "rollout_000" / "turns.jsonl").read_text().splitlines()) == 3


@pytest.mark.parametrize(("threads", "inline"), [(1, True), (2, False)])
def test_a_worker_with_one_core_of_its_own_writes_inline(monkeypatch, threads, inline):
    # A worker's share of the cores decides: with one, a writer thread would only take turns
    # with its event loop for the interpreter's lock.
    from loom_sim.executors import process_worker
    from loom_sim.store import writer_threads

    seen = []
    monkeypatch.setattr(
        process_worker.trio, "run", lambda *a: seen.append(writer_threads._INLINE[0])
    )
    monkeypatch.setenv("LOOM_SIM_THREADS", "1")

    class Pipe:
        def close(self):
            pass

    job = type("Job", (), {"threads": threads})()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        process_worker.work(Pipe(), job)  # type: ignore[arg-type]
    finally:
        write_inline(False)
        for sig, handler in handlers.items():  # the worker ignores both; this process must not
            signal.signal(sig, handler)
    assert seen == [inline]
