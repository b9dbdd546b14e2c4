"""Issue 9 acceptance: a second host (``TaskHost``) drives the unchanged loop over several
invocations through ``continue`` messages, on SQLite and on the Firestore emulator with a real
Pub/Sub emulator delivery; a crash between invocations is recovered by the sweep; every step and
every tool execution happens exactly once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shared.durable.dispatcher import PubSubDispatcher, RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.loop.resume import resume_run
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry
from tests.agent.conftest import make_settings
from tests.emulators import TEST_PROJECT
from tests.emulators import pubsub_topic as emulator_topic
from tests.kernel.task_host import TaskHost, start_task, task_record
from tests.leases import LONG_LEASE_S, lapse
from tests.messages import deliver

STEPS = 7  # six tool steps and a final answer: four invocations of two steps


class Crash(BaseException):
    """The process dies (not an error the loop could handle)."""


class Counter:
    def __init__(self) -> None:
        self.executions: list[int] = []
        self.model_calls: list[int] = []
        self.crash_at_call: int | None = None
        self.lock = threading.Lock()


def registry(counter: Counter) -> ToolRegistry:
    reg = default_registry()

    @reg.tool(side_effect=False)
    def count_step(ctx: ToolContext, n: int) -> dict[str, Any]:
        """Record that step n ran.

        Args:
            n: The step number.
        """
        with counter.lock:
            counter.executions.append(n)
        return {"done": n}

    return reg


def model(counter: Counter) -> FunctionModel:
    """Calls ``count_step`` with the number of tool results it has seen + 1, then answers."""

    def answer(request: ModelRequest) -> Turn:
        with counter.lock:
            counter.model_calls.append(len(counter.model_calls) + 1)
            if counter.crash_at_call == len(counter.model_calls):
                counter.crash_at_call = None
                raise Crash()
        done = sum(1 for t in request.turns for p in t.parts if p.function_response is not None)
        if done < STEPS - 1:
            return calls_turn(call("count_step", {"n": done + 1}))
        return text_turn(f"finished after {done} steps")

    return FunctionModel(answer, name="gemini-3-flash-preview")


def make_rt(store: DocStore, counter: Counter, channel: Any = None, **overrides: Any) -> Runtime:
    return Runtime(make_settings(**overrides), store=store, model=model(counter), registry=registry(counter),
                   dispatcher=channel or RecordingDispatcher(), hosts=[TaskHost(2)])


def recorded(rt: Runtime) -> RecordingDispatcher:
    d = rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    return d


def assert_done_exactly_once(rt: Runtime, counter: Counter, run_id: str) -> None:
    record = task_record(rt, run_id)
    assert record is not None and record["status"] == "completed" and record["result"] == "finished after 6 steps"
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.status == "completed" and snap.run.steps == STEPS
    assert sorted(counter.executions) == list(range(1, STEPS)) == counter.executions  # each tool step once, in order
    actions = rt.runs.list_actions(run_id)
    assert [(a.args["n"], a.status, a.attempts) for a in actions] == [(n, "completed", 1) for n in range(1, STEPS)]
    entries = rt.usage.for_unit("alice", run_id)
    assert sorted(e.step for e in entries if e.outcome == "ok") == list(range(1, STEPS + 1))
    assert rt.outbox.repo.all() == []  # no continue message outlives its unit
    events = rt.runs.list_events(run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert rt.store.query(Query("threads")) == []  # a task has no thread and writes no message


def invocations(rt: Runtime) -> int:
    """Deliver every recorded message (each delivery is one invocation); how many there were."""

    def a_continuation(m: WorkMessage) -> None:
        assert m.kind == "continue" and m.unitId and m.schemaVersion == 1

    return deliver(rt, a_continuation)


def test_task_host_yields_and_continues_over_invocations_on_sqlite(sqlite_docstore: DocStore) -> None:
    counter = Counter()
    rt = make_rt(sqlite_docstore, counter)
    run_id = start_task(rt, "alice", "count to six")
    assert resume_run(rt.services, run_id) == "resumed"  # the first invocation: two steps, then yield
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.steps == 2 and snap.run.lease is not None
    assert snap.run.lease.owner == "parked" and task_record(rt, run_id) is None
    assert invocations(rt) == 3  # 1 + 3 invocations in all
    assert_done_exactly_once(rt, counter, run_id)
    assert counter.model_calls == list(range(1, STEPS + 1))  # no model call was repeated


def test_duplicate_continue_messages_are_harmless(sqlite_docstore: DocStore) -> None:
    counter = Counter()
    rt = make_rt(sqlite_docstore, counter)
    run_id = start_task(rt, "alice", "count to six")
    resume_run(rt.services, run_id)
    deliver(rt, copies=3)  # Pub/Sub delivers at least once
    assert_done_exactly_once(rt, counter, run_id)


def test_a_crash_between_invocations_is_recovered_by_the_sweep(sqlite_docstore: DocStore) -> None:
    """The second invocation claims the task and dies in its first model call (lease held, step not
    committed); its continue message is gone. Once the lease expires the sweep takes the task over
    and it finishes with every step committed once and no tool run twice."""
    counter = Counter()
    rt = make_rt(sqlite_docstore, counter, lease_ttl_s=LONG_LEASE_S)
    run_id = start_task(rt, "alice", "count to six")
    resume_run(rt.services, run_id)
    (msg,) = recorded(rt).take()
    counter.crash_at_call = 3
    with pytest.raises(Crash):
        rt.router.handle(msg)
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.steps == 2 and snap.run.lease is not None
    assert snap.run.lease.owner != "parked"  # held by the dead invocation
    assert rt.router.sweep()["recovered"] == 0  # the lease has not expired: nobody may take over yet
    lapse(rt.runs, run_id)  # now it has
    assert rt.router.sweep()["recovered"] == 1
    invocations(rt)
    assert_done_exactly_once(rt, counter, run_id)
    assert len(counter.model_calls) == STEPS + 1  # only the crashed call was made again


def test_a_lost_continue_message_is_republished_by_the_sweep(sqlite_docstore: DocStore) -> None:
    counter = Counter()
    rt = make_rt(sqlite_docstore, counter, lease_ttl_s=0.05)
    run_id = start_task(rt, "alice", "count to six")
    resume_run(rt.services, run_id)
    assert len(recorded(rt).take()) == 1  # lost: never delivered
    (entry,) = rt.outbox.repo.all()
    assert entry.kind == "continue" and entry.status == "published"
    time.sleep(0.15)  # twice the lease: the message may be lost
    found = rt.router.sweep()
    assert found["republished"] + found["recovered"] >= 1
    invocations(rt)
    assert_done_exactly_once(rt, counter, run_id)


@pytest.fixture
def pubsub_topic(pubsub_emulator: Any) -> Iterator[tuple[str, Callable[[], list[bytes]]]]:
    """A topic on the Pub/Sub emulator and a pull of its messages' data (acknowledged once read)."""
    with emulator_topic("agent-continue") as (name, pull):
        yield name, lambda: [m.data for m in pull()]


@pytest.mark.firestore
@pytest.mark.pubsub
def test_task_host_on_firestore_with_pubsub_delivery_and_a_crash(
        firestore_docstore: DocStore, pubsub_topic: tuple[str, Callable[[], list[bytes]]]) -> None:
    """Each invocation is a fresh runtime (another process) that reads the message Pub/Sub
    delivered; one of them dies mid-step and the sweep of yet another one recovers the task."""
    topic, pull = pubsub_topic
    counter = Counter()

    def process(**overrides: Any) -> Runtime:
        return make_rt(firestore_docstore, counter, PubSubDispatcher(TEST_PROJECT, topic), dispatcher="pubsub",
                       resume_topic=topic, lease_ttl_s=1.0, **overrides)

    run_id = start_task(process(), "alice", "count to six")
    assert resume_run(process().services, run_id) == "resumed"
    delivered = 0
    crashed = False
    deadline = time.monotonic() + 90
    while task_record(process(), run_id) is None and time.monotonic() < deadline:
        bodies = pull()
        for body in bodies:
            message = WorkMessage.model_validate(json.loads(body))
            assert message.kind == "continue"
            delivered += 1
            if delivered == 2 and not crashed:
                crashed = True
                counter.crash_at_call = len(counter.model_calls) + 1
                with pytest.raises(Crash):
                    process().router.handle_body(json.loads(body))
                continue
            process().router.handle_body(json.loads(body))
        if not bodies and crashed:
            time.sleep(0.5)
            process().router.sweep()  # the scheduler's tick, in another process
    assert crashed and delivered >= 3
    assert_done_exactly_once(process(), counter, run_id)
