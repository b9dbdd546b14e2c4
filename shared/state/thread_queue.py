"""A thread's queue of runs (docs/run-control.md): what a new run does when its thread is busy, how
the next queued run leaves the queue, and cancelling a run.

The thread document holds the queue (run ids, in the order they start) and, when the active run
was asked to stop at its next step boundary, who asked and how (``interruptRunId``,
``interruptMode``). Every change is one transaction that reads the thread and its active run, so
concurrent requests on one thread are serialised by the store: the queue's order is the order in
which their transactions committed.

A queued run leaves the queue through its outbox entry (``dequeue``, written with it): the
handler of that message starts it only when it is at the head and the thread has no active run;
the run that releases the thread publishes the head's entry again after its commit. The entry
outlives every lost message (``shared/durable/outbox.py``), so a queued run is never lost, and the
start is one transaction (``start_queued``), so it is never started twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from shared.errors import Conflict
from shared.state import paths
from shared.state.docstore import DocStore, Query, Transaction, Write
from shared.state.paused_runs import FailPaused, close_paused, pause_state
from shared.state.records import (
    AuditRecord,
    MessageRecord,
    QueuedStart,
    RunRecord,
    StopMode,
    StopRequest,
    ThreadRecord,
    now,
)

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
Strategy = MultitaskStrategy
QueueEntry = Callable[[RunRecord], tuple[str, Write]]
"""``entry(run)``: the id and the write of the outbox entry that starts a queued run."""
EventWrite = Callable[[str, dict[str, Any]], Write]
AuditWrite = Callable[[AuditRecord], Write]
DEQUEUE_PREFIX = "dequeue-"


def thread_path(run: RunRecord) -> str:
    """The document of ``run``'s thread: the user's own, or the shared collection for a thread
    begun before issue 35 (``RunRecord.thread_scope``)."""
    if run.thread_scope == "shared":
        return paths.shared_thread(run.thread_id)
    return paths.thread(run.uid, run.thread_id)


def stop_request_write(run_id: str, request: StopRequest) -> Write:
    """Ask the active run ``run_id`` to stop at its next step boundary: the field alone, without
    ``updatedAt``, so the invocation driving it can tell this write from any other (``RunsRepo.adopt_stop``)."""
    return Write("update", paths.run(run_id), {"stopRequested": request.to_doc()})


def dequeue_entry_id(run_id: str) -> str:
    """The outbox entry that starts the queued run ``run_id`` when its turn comes."""
    return f"{DEQUEUE_PREFIX}{run_id}"


@dataclass(frozen=True)
class Busy:
    """The thread was busy and the new run was queued: ``deliver`` names the outbox entries to
    publish after the commit (the new run's own, and the head's when the thread is idle)."""

    queued: bool = True
    deliver: tuple[str, ...] = ()


def _active(t: Transaction, thread: ThreadRecord) -> tuple[RunRecord, str] | None:
    if not thread.active_run_id:
        return None
    doc = t.get(paths.run(thread.active_run_id))
    if doc is None:
        return None
    run = RunRecord.from_doc(doc.data, doc.path)
    return None if run.terminal else (run, doc.token)


def run_messages_query(run: RunRecord) -> Query:
    """``run``'s messages in its thread (``rollback`` removes them)."""
    if run.thread_scope == "shared":
        return Query(paths.shared_messages(run.thread_id), where=(("runId", run.run_id),))
    return Query(paths.messages(run.uid, run.thread_id), where=(("runId", run.run_id),))


def latest_messages_query(run: RunRecord, limit: int) -> Query:
    """The last ``limit`` messages of ``run``'s thread, newest first."""
    if run.thread_scope == "shared":
        return Query(paths.shared_messages(run.thread_id), order_by="createdAt", descending=True, limit=limit)
    return Query(paths.messages(run.uid, run.thread_id), order_by="createdAt", descending=True, limit=limit)


def run_message_deletes(t: Transaction, run: RunRecord) -> list[Write]:
    """The writes removing ``run``'s messages from its thread's history (``rollback``)."""
    return [Write("delete", d.path) for d in t.query(run_messages_query(run))]


def busy_thread(t: Transaction, thread: ThreadRecord, where: str, run: RunRecord, strategy: Strategy,
                queue_entry: QueueEntry | None, queued_start: QueuedStart | None, *, fail_paused: FailPaused,
                event_write: EventWrite, audit_write: AuditWrite) -> Busy | None:
    """What ``strategy`` does with the new ``run`` on ``thread`` (read in ``t`` at ``where``). None: the run starts
    now (the thread was free, or its paused run was closed: its approvals expired, or an
    ``interrupt``/``rollback`` closed the pause). A ``Busy``: ``run`` was made ``queued`` (the
    caller writes it). ``reject`` raises Conflict instead of queueing."""
    active = _active(t, thread)
    pause = pause_state(t, active[0]) if active is not None else None
    if active is not None and (pause == "expired" or (pause == "open" and strategy in ("interrupt", "rollback"))):
        old, token = active
        if pause == "open" and strategy == "rollback":
            for w in run_message_deletes(t, old):
                t.write(w)
        close_paused(t, old, token, run.run_id, "expired" if pause == "expired" else "superseded", fail=fail_paused,
                     event_write=event_write, audit_write=audit_write)
        if pause == "open" or not thread.queue:
            # An interrupt goes ahead of the queue (its end starts the queue's head: it knows, as
            # a run queued behind an active one tells it); an expired pause frees the thread.
            run.queued_behind = True if thread.queue else None
            return None
        active = None
    if active is None and not thread.queue:
        return None
    if strategy == "reject" or queue_entry is None or queued_start is None:
        if active is not None:
            _refuse_if_active(active[0], undecided=pause == "open")
        raise Conflict(f"thread has queued runs ({thread.queue[0]} starts next)", code="RUN_ACTIVE",
                       details={"runId": thread.queue[0], "queued": len(thread.queue)})
    run.status, run.lease, run.lease_expires_at = "queued", None, 0.0
    run.queued = queued_start.model_copy(update={"position": thread.queued_count})
    queue = [*thread.queue, run.run_id] if strategy == "enqueue" else [run.run_id, *thread.queue]
    fields: dict[str, Any] = {"queue": queue, "queuedCount": thread.queued_count + 1, "updatedAt": now()}
    if active is not None and (strategy != "enqueue" or not active[0].queued_behind):
        # The active run learns that a run waits behind it (its end starts the queue's head) and,
        # for an interrupt/rollback, that it must stop: on its own document, without ``updatedAt``.
        # Once it knows, a further enqueue leaves its document alone: concurrent enqueues on one
        # thread would otherwise all write the running run's document too (contention).
        notice: dict[str, Any] = {"queuedBehind": True}
        if strategy != "enqueue":
            fields.update(interruptRunId=active[0].run_id, interruptMode=strategy, interruptBy=run.run_id)
            mode: StopMode = "rollback" if strategy == "rollback" else "interrupt"
            notice["stopRequested"] = StopRequest(mode=mode, by=run.run_id).to_doc()
        t.write(Write("update", paths.run(active[0].run_id), notice))
    if active is None:
        fields["activeRunId"] = None
    t.write(Write("update", where, fields))
    entry_id, entry = queue_entry(run)
    t.write(entry)
    deliver = [entry_id]
    if active is None and queue[0] != run.run_id:
        deliver.append(dequeue_entry_id(queue[0]))
    return Busy(deliver=tuple(deliver))


def _refuse_if_active(active: RunRecord, *, undecided: bool) -> None:
    if undecided:
        raise Conflict(f"thread has a run awaiting approval ({active.run_id}); decide it or set "
                       "multitaskStrategy", code="APPROVAL_PENDING", details={"runId": active.run_id})
    raise Conflict(f"thread already has an active run ({active.run_id})", code="RUN_ACTIVE",
                   details={"runId": active.run_id})


@dataclass(frozen=True)
class QueuedLaunch:
    """What a queued run starts with, built from the run and its thread's latest messages."""

    turns: Sequence[Any]
    message: MessageRecord
    events: list[dict[str, Any]]
    writes: list[Write] = field(default_factory=list)


StartOutcomeKind = Literal["started", "wait", "gone"]
Build = Callable[[RunRecord, list[MessageRecord]], QueuedLaunch]


class ThreadQueue:
    """The transactions over a thread's queue (paths owned here and in ``paths``)."""

    def __init__(self, store: DocStore, *, turn_write: Callable[[str, int, Any], Write],
                 event_writes: Callable[[str, Sequence[dict[str, Any]]], list[Write]],
                 history: int = 30) -> None:
        self.store = store
        self._turn_write = turn_write
        self._event_writes = event_writes
        self._history = history

    def thread_of(self, run: RunRecord) -> ThreadRecord | None:
        doc = self.store.get(thread_path(run)) if run.thread_id else None
        return None if doc is None else ThreadRecord.from_doc(doc.data, doc.path)

    def next_run(self, run: RunRecord) -> str | None:
        """The queued run to start when ``run``'s thread has no active run and runs are queued."""
        thread = self.thread_of(run)
        if thread is None or not thread.queue or thread.active_run_id:
            return None
        return thread.queue[0]

    def start_queued(self, run_id: str, build: Build) -> tuple[StartOutcomeKind, RunRecord | None]:
        """Start the queued run ``run_id`` if it is at the head of its thread's queue and the thread
        has no active run: one transaction writes it ``planning`` with a parked lease (``build``
        adds the outbox entry that continues it), its turns and prompt, and makes it the
        thread's active run. ``wait``: not its turn yet; ``gone``: it already left the queue."""

        def txn(t: Transaction) -> tuple[StartOutcomeKind, RunRecord | None]:
            doc = t.get(paths.run(run_id))
            if doc is None:
                return "gone", None
            run = RunRecord.from_doc(doc.data, doc.path)
            if run.status != "queued":
                return "gone", run
            where = thread_path(run)
            thread_doc = t.get(where)
            if thread_doc is None:
                return "gone", run
            thread = ThreadRecord.from_doc(thread_doc.data, thread_doc.path)
            if run_id not in thread.queue:
                return "gone", run
            if thread.queue[0] != run_id or _active(t, thread) is not None:
                return "wait", run
            docs = t.query(latest_messages_query(run, self._history))
            launch = build(run, [MessageRecord.from_doc(d.data, d.path) for d in reversed(docs)])
            run.queued_behind = True if len(thread.queue) > 1 else None  # its end starts the next one
            t.write(Write("set", paths.run(run_id), run.to_doc()))
            t.write(Write("update", where, {"activeRunId": run_id, "queue": thread.queue[1:], "updatedAt": now()}))
            for i, turn in enumerate(launch.turns):
                t.write(self._turn_write(run_id, i, turn))
            t.write(Write("create", f"{where}/messages/{launch.message.id}", launch.message.to_doc()))
            for w in [*self._event_writes(run_id, launch.events), *launch.writes]:
                t.write(w)
            return "started", run

        return self.store.run_transaction(txn)

    def cancel_queued(self, uid: str, run_id: str, fail: Callable[[RunRecord], dict[str, Any]],
                      writes: Sequence[Write]) -> RunRecord | None:
        """Cancel a queued run: it leaves its thread's queue and ends as ``fail`` says, with
        ``writes`` (its outbox entry's removal). None when it is not queued (any more)."""

        def txn(t: Transaction) -> RunRecord | None:
            doc = t.get(paths.run(run_id))
            if doc is None:
                return None
            run: RunRecord = RunRecord.from_doc(doc.data, doc.path)
            if run.uid != uid or run.status != "queued":
                return None
            thread_doc = t.get(thread_path(run))
            if thread_doc is not None:
                thread = ThreadRecord.from_doc(thread_doc.data, thread_doc.path)
                t.write(Write("update", thread_path(run),
                              {"queue": [i for i in thread.queue if i != run_id], "updatedAt": now()}))
            event = fail(run)
            t.write(Write("set", paths.run(run_id), run.to_doc(), if_token=doc.token))
            for w in [*self._event_writes(run_id, [event]), *writes]:
                t.write(w)
            return run

        cancelled: RunRecord | None = self.store.run_transaction(txn)
        return cancelled

    def request_stop(self, uid: str, run_id: str) -> bool:
        """Ask the active run ``run_id`` to stop at its next step boundary (a cancel). False when it
        is not its thread's active run."""

        def txn(t: Transaction) -> bool:
            doc = t.get(paths.run(run_id))
            if doc is None:
                return False
            run = RunRecord.from_doc(doc.data, doc.path)
            thread_doc = t.get(thread_path(run)) if run.thread_id else None
            if run.uid != uid or thread_doc is None or run.terminal:
                return False
            if thread_doc.data.get("activeRunId") != run_id:
                return False
            t.write(Write("update", thread_path(run),
                          {"interruptRunId": run_id, "interruptMode": "cancel", "interruptBy": None,
                           "updatedAt": now()}))
            t.write(stop_request_write(run_id, StopRequest(mode="cancel")))
            return True

        return self.store.run_transaction(txn)
