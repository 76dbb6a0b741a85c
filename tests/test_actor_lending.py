"""An idle actor's request is handled in the asker's own task; everything an actor promises
still holds: one message at a time, in the order sent, failures raised as themselves, the same
envelopes traced."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from loom_sim.actors.base import Actor, Post

from loom_sim.messages import Body, Heard, Judge, Judgement
from loom_sim.store.trace import TraceRecorder


def judge(turn: int) -> Judge:
    return Judge(turn=turn, rubric="r", window=[], schema={}, rubric_id="test")


class Clerk(Actor):
    """Notes what it handles, in which task, and whether two handlings ever overlapped."""

    role = "clerk"

    def __init__(self) -> None:
        self.handled: list[tuple[str, int]] = []
        self.tasks: dict[int, trio.lowlevel.Task] = {}
        self.inside = 0
        self.overlapped = False
        self.hold: dict[int, trio.Event] = {}  # a request of this turn waits for its event
        self.entered: dict[int, trio.Event] = {}

    async def handle(self, body: Body) -> Body | None:
        self.inside += 1
        self.overlapped |= self.inside > 1
        try:
            match body:
                case Heard():
                    self.handled.append(("heard", body.turn))
                    self.tasks[-100 - body.turn] = trio.lowlevel.current_task()
                    return None
                case Judge():
                    self.tasks[body.turn] = trio.lowlevel.current_task()
                    self.entered.setdefault(body.turn, trio.Event()).set()
                    if body.turn in self.hold:
                        await self.hold[body.turn].wait()
                    if body.turn < 0:
                        raise ZeroDivisionError("division by zero")
                    self.handled.append(("judge", body.turn))
                    return Judgement(ok=True, parsed={"turn": body.turn})
        finally:
            self.inside -= 1
        raise TypeError(type(body).__name__)


# A broken lending hangs rather than fails (an actor stuck on a request nobody waits for):
# each test fails after this long instead.
HANG_S = 20


async def started(clerk: Clerk, nursery: trio.Nursery, tracer: TraceRecorder) -> Post:
    post = Post("rollout_000", tracer)
    post.spawn(nursery, clerk)
    await trio.testing.wait_all_tasks_blocked()  # its loop is parked on its empty inbox
    return post


async def test_a_request_to_an_idle_actor_is_answered_in_the_askers_task():
    clerk, tracer = Clerk(), TraceRecorder(None)
    with trio.fail_after(HANG_S):
        async with trio.open_nursery() as nursery:
            post = await started(clerk, nursery, tracer)
            reply = await post.request("clerk", judge(1), turn=1)
            nursery.cancel_scope.cancel()
    assert reply.parsed == {"turn": 1}
    assert clerk.tasks[1] is trio.lowlevel.current_task()
    assert tracer.count == 2 and post.next_id == 3  # the request and its reply, as ever


async def tell_then_ask(clerk: Clerk) -> None:
    """A ``Heard`` tell, then a request at once, then everything settled."""
    with trio.fail_after(HANG_S):
        async with trio.open_nursery() as nursery:
            post = await started(clerk, nursery, TraceRecorder(None))
            await post.tell("clerk", Heard(turn=0, persona="a", interlocutor="b"), turn=0)
            await post.request("clerk", judge(1), turn=1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()


async def test_a_tell_sent_before_a_request_is_handled_before_it():
    clerk = Clerk()
    await tell_then_ask(clerk)
    assert clerk.handled == [("heard", 0), ("judge", 1)]
    assert clerk.tasks[1] is not trio.lowlevel.current_task()  # it went through the inbox


async def test_a_busy_actor_takes_the_next_request_through_its_inbox_after_the_first():
    clerk = Clerk()
    clerk.hold[1] = trio.Event()
    replies: dict[int, Judgement] = {}
    with trio.fail_after(HANG_S):
        async with trio.open_nursery() as nursery:
            post = await started(clerk, nursery, TraceRecorder(None))

            async def ask(turn: int) -> None:
                replies[turn] = await post.request("clerk", judge(turn), turn=turn)

            nursery.start_soon(ask, 1)
            await clerk.entered.setdefault(1, trio.Event()).wait()  # lent to the first asker
            nursery.start_soon(ask, 2)
            await trio.testing.wait_all_tasks_blocked()
            assert clerk.handled == []  # the second waits while the first is in hand
            clerk.hold[1].set()
            await clerk.entered.setdefault(2, trio.Event()).wait()
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert clerk.handled == [("judge", 1), ("judge", 2)]
    assert not clerk.overlapped
    assert clerk.tasks[1] is not clerk.tasks[2]  # the first in its asker's task, then the loop's
    assert replies[1].parsed == {"turn": 1} and replies[2].parsed == {"turn": 2}


async def test_a_failure_in_a_lent_handler_reaches_the_asker_as_itself_and_the_actor_goes_on():
    clerk = Clerk()
    with trio.fail_after(HANG_S):
        async with trio.open_nursery() as nursery:
            post = await started(clerk, nursery, TraceRecorder(None))
            with pytest.raises(ZeroDivisionError) as raised:
                await post.request("clerk", judge(-1), turn=0)
            assert "raised by the clerk actor handling Judge" in raised.value.__notes__[0]
            again = await post.request("clerk", judge(2), turn=2)
            nursery.cancel_scope.cancel()
    assert again.parsed == {"turn": 2}


async def test_a_lent_request_cancelled_midway_frees_the_actor_for_the_next():
    clerk = Clerk()
    clerk.hold[1] = trio.Event()  # never set: this request is cancelled while in hand
    with trio.fail_after(HANG_S):
        async with trio.open_nursery() as nursery:
            post = await started(clerk, nursery, TraceRecorder(None))
            with trio.CancelScope() as scope:
                nursery.start_soon(lambda: clerk.entered.setdefault(1, trio.Event()).wait())

                async def cancel_once_entered() -> None:
                    await clerk.entered.setdefault(1, trio.Event()).wait()
                    scope.cancel()

                nursery.start_soon(cancel_once_entered)
                await post.request("clerk", judge(1), turn=1)
            assert scope.cancelled_caught
            reply = await post.request("clerk", judge(2), turn=2)
            nursery.cancel_scope.cancel()
    assert reply.parsed == {"turn": 2}
    assert clerk.tasks[2] is trio.lowlevel.current_task()  # idle again: lent again


class QuickClerk(Clerk):
    quick_tells = True


async def test_only_an_actor_whose_tells_wait_on_nothing_takes_them_in_the_senders_task():
    for kind, lent in ((Clerk, False), (QuickClerk, True)):
        clerk = kind()
        await tell_then_ask(clerk)
        assert clerk.handled == [("heard", 0), ("judge", 1)]
        here = trio.lowlevel.current_task()
        assert (clerk.tasks[-100] is here) is lent
        assert (clerk.tasks[1] is here) is lent  # nothing left in hand: the request is lent too
