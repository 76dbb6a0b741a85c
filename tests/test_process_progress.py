"""A worker's progress reaches the parent a few times a second, in one message, in order: not
a pipe write per turn."""

from __future__ import annotations

import multiprocessing

import trio

from loom_sim.executors.process_messages import (
    Ended,
    Progress,
    Started,
    TurnDone,
    decode_from_worker,
)
from loom_sim.executors.process_worker import PROGRESS_S, PipeProgress


def test_events_are_held_and_sent_together_in_the_order_they_happened():
    parent, child = multiprocessing.Pipe(duplex=True)
    progress = PipeProgress(child)
    progress.rollout_started("rollout_000", 4, 0)
    progress.turn_done("rollout_000", 0, "onset", 12, None, 0.5)
    progress.rollout_ended("rollout_000", "done", None)
    assert not parent.poll()  # held, not written
    progress.send()
    message = decode_from_worker(parent.recv_bytes())
    assert message == Progress(
        [
            Started("rollout_000", 4, 0),
            TurnDone("rollout_000", 0, "onset", 12, None, 0.5),
            Ended("rollout_000", "done", None),
        ]
    )
    progress.send()  # nothing held: nothing written
    assert not parent.poll()


async def test_what_is_held_goes_every_interval(autojump_clock):
    parent, child = multiprocessing.Pipe(duplex=True)
    progress = PipeProgress(child)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(progress.send_every, PROGRESS_S)
        progress.turn_done("rollout_001", 3, "peak", 40, 0.01, 2.0)
        await trio.sleep(PROGRESS_S * 1.5)
        assert parent.poll()
        assert decode_from_worker(parent.recv_bytes()) == Progress(
            [TurnDone("rollout_001", 3, "peak", 40, 0.01, 2.0)]
        )
        await trio.sleep(PROGRESS_S * 3)
        assert not parent.poll()  # nothing new: nothing sent
        nursery.cancel_scope.cancel()
