"""``make dev``'s inline dispatcher delivers many messages at once: a resume mostly waits on the
model, and with a pool of 2 the load test's 50 users queued every resume behind the others."""

from __future__ import annotations

import queue
import threading

from shared.durable.dispatcher import INLINE_WORKERS, InlineDispatcher
from shared.durable.messages import WorkMessage


def test_inline_dispatcher_runs_its_workers_deliveries_at_once() -> None:
    assert INLINE_WORKERS >= 32
    # Every delivery waits until all of them are in flight: that only happens if the pool runs
    # them concurrently (the timeout turns a too-small pool into a failure, not a hang).
    barrier = threading.Barrier(INLINE_WORKERS, timeout=60)
    outcomes: queue.Queue[str] = queue.Queue()

    def deliver(message: WorkMessage) -> None:
        try:
            barrier.wait()
            outcomes.put(f"delivered {message.unitId}")
        except threading.BrokenBarrierError:
            outcomes.put(f"not concurrent {message.unitId}")

    dispatcher = InlineDispatcher(deliver)
    for n in range(INLINE_WORKERS):
        dispatcher.publish(WorkMessage(kind="resume", unitId=f"run_{n}"))
    got = sorted(outcomes.get(timeout=120) for _ in range(INLINE_WORKERS))
    assert got == sorted(f"delivered run_{n}" for n in range(INLINE_WORKERS))


def test_a_smaller_pool_cannot_meet_at_the_barrier() -> None:
    """The check above can fail: with 2 workers, 3 deliveries never are in flight together."""
    barrier = threading.Barrier(3, timeout=1)
    outcomes: queue.Queue[str] = queue.Queue()

    def deliver(message: WorkMessage) -> None:
        try:
            barrier.wait()
            outcomes.put("together")
        except threading.BrokenBarrierError:
            outcomes.put("alone")

    dispatcher = InlineDispatcher(deliver, workers=2)
    for n in range(3):
        dispatcher.publish(WorkMessage(kind="resume", unitId=f"run_{n}"))
    # Two wait at the barrier until it breaks; the third starts only after that, on a broken one.
    got = sorted(outcomes.get(timeout=120) for _ in range(3))
    assert got == ["alone", "alone", "alone"]
