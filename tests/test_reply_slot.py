"""A request's reply slot (loom_sim/core/reply.py): the reply reaches the one waiting for it,
whichever comes first, and a reply for an asker that was cancelled is taken without error."""

from __future__ import annotations

import trio
import trio.testing

from loom_sim.core.reply import ReplySlot


async def test_a_reply_set_before_the_wait_is_received():
    slot = ReplySlot[str]()
    slot.send_nowait("ready")
    assert await slot.receive() == "ready"


async def test_the_asker_waits_until_the_reply_is_set():
    slot = ReplySlot[str]()
    got: list[str] = []

    async def ask() -> None:
        got.append(await slot.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        slot.send_nowait("answer")
    assert got == ["answer"]


async def test_a_cancelled_asker_leaves_the_reply_unread():
    slot = ReplySlot[int]()
    with trio.move_on_after(0) as scope:
        await slot.receive()
    assert scope.cancelled_caught
    slot.send_nowait(3)  # the actor answers late: no error, nobody waiting
