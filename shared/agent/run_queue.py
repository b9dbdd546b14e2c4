"""Runs of a busy thread (docs/run-control.md): starting the next queued run through the durable
continuation path, stopping an active run at its next step boundary, cancelling a run.

How a queued run learns the previous one ended: the run that releases its thread (completed,
failed, interrupted, cancelled, its pause closed) publishes the outbox entry of the queue's head
after its commit (:func:`publish_next`). The ``dequeue`` handler starts that run in one
transaction (``planning``, a parked lease, a ``continue`` entry) and publishes its ``continue``
message, whose handler drives it like a run that yielded: Pub/Sub in production (any instance),
the inline dispatcher in ``make dev``. Every step is recorded before its message is published, so
an instance lost at any point leaves an outbox entry the sweep publishes again (and a sweep task
publishes the head of every idle thread that still has queued runs).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from shared.agent.conversation import conversation_turns
from shared.api import ConversationItem
from shared.durable import leases
from shared.durable.kinds import CONTINUE, DEQUEUE, continue_entry_id
from shared.durable.messages import WorkMessage
from shared.errors import Conflict
from shared.events import ErrorEvent, StatusEvent, event_to_doc
from shared.failures import FailureCode
from shared.loop import stops
from shared.loop.context import Services
from shared.loop.outcomes import NextStepFailed
from shared.models.base import Part
from shared.state.docstore import Write
from shared.state.host_states import PlanRunState
from shared.state.records import MessageRecord, RunError, RunRecord, RunResult, now
from shared.state.thread_queue import DEQUEUE_PREFIX, QueuedLaunch, ThreadQueue, dequeue_entry_id
from shared.state.transitions import move_run

if TYPE_CHECKING:
    from shared.durable.router import Disposition  # an annotation: a run's stop loads no router

log = logging.getLogger("agent_runtime.run_queue")


def thread_queue(services: Services) -> ThreadQueue:
    runs = services.runs
    return ThreadQueue(runs.store, turn_write=runs.turn_create_write, event_writes=runs.event_writes)


def queue_entry(services: Services, run: RunRecord) -> tuple[str, Write]:
    """The outbox entry (written with the queued run) that starts it when its turn comes."""
    entry_id = dequeue_entry_id(run.run_id)
    return entry_id, services.outbox.record(WorkMessage(kind=DEQUEUE, unitId=run.run_id, uid=run.uid), entry_id)


def publish(services: Services, uid: str, entry_ids: tuple[str, ...] | list[str]) -> None:
    """After queueing a run: publish the ``dequeue`` messages its transaction asked for."""
    for entry_id in entry_ids:
        _send_dequeue(services, entry_id.removeprefix(DEQUEUE_PREFIX), uid)


def publish_next(services: Services, run: RunRecord) -> None:
    """After a commit that released ``run``'s thread: publish the start of its next queued run. A
    crash before this leaves the entry for the sweep (``recover_queues``)."""
    try:
        head = thread_queue(services).next_run(run)
        if head is not None:
            _send_dequeue(services, head, run.uid)
    except Exception:
        log.warning("starting the thread's next run failed; the sweep starts it", exc_info=True)


def _send_dequeue(services: Services, run_id: str, uid: str) -> bool:
    """Publish the ``dequeue`` message of ``run_id`` (its entry is written again if it was removed
    while the run waited)."""
    return services.outbox.send(WorkMessage(kind=DEQUEUE, unitId=run_id, uid=uid), dequeue_entry_id(run_id))


def queued_result(run: RunRecord) -> RunResult:
    """What ``POST /api/agent/run`` answers (202) for a run that waits in its thread's queue."""
    return RunResult(ok=True, run_id=run.run_id, thread_id=run.thread_id, status="queued", model=run.model,
                     summary="queued: the run starts when the thread's earlier runs have ended",
                     follow=f"/api/agent/runs/{run.run_id}/events?follow=1&until=end")


def _launch(services: Services, run: RunRecord, history: list[MessageRecord]) -> QueuedLaunch:
    queued = run.queued
    assert queued is not None
    items = ([ConversationItem.model_validate(c) for c in queued.conversation] if queued.conversation
             else [ConversationItem(role=m.role, text=m.text) for m in history])
    turns = conversation_turns(items, queued.prompt, [Part.model_validate(a) for a in queued.attachments])
    run.turn_count = len(turns)  # one document each (turns/0...): its first invocation reads them by name
    move_run(run, "planning")
    run.lease = leases.parked(services.settings.lease_ttl_s)
    run.lease_expires_at = run.lease.expires_at
    run.started_at = run.updated_at = now()
    run.last_seq += 1
    event = event_to_doc(StatusEvent(seq=run.last_seq, status="planning", threadId=run.thread_id, runId=run.run_id))
    message = MessageRecord(id=services.new_id("msg"), role="user", text=queued.prompt, run_id=run.run_id)
    go = services.outbox.record(WorkMessage(kind=CONTINUE, unitId=run.run_id, uid=run.uid),
                                continue_entry_id(run.run_id, run.steps))
    return QueuedLaunch(turns=turns, message=message, events=[event],
                        writes=[go, services.outbox.done(dequeue_entry_id(run.run_id))])


def handle_dequeue(services: Services, message: WorkMessage) -> Disposition:
    """Handler of ``dequeue`` messages: start the queued run they name if its turn came."""
    if message.unitId is None:
        return "done"
    outcome, run = thread_queue(services).start_queued(message.unitId, lambda r, h: _launch(services, r, h))
    log.info("dequeue message handled: %s", outcome, extra={"fields": {"runId": message.unitId}})
    if outcome == "started" and run is not None:
        services.outbox.deliver(continue_entry_id(run.run_id, run.steps))
    # Not its turn yet: the entry goes too (no re-publication while it waits); the run that frees
    # the thread publishes the head's message again (``publish_next``), or the sweep does.
    return "done"


def recover_queues(services: Services, limit: int) -> int:
    """Sweep task: publish the head of every idle thread that still has queued runs (a run that
    released its thread and died before publishing)."""
    queue = thread_queue(services)
    sent = 0
    for run in services.runs.threads_with_queued_runs(limit):
        head = queue.next_run(run)
        if head is not None and _send_dequeue(services, head, run.uid):
            sent += 1
    return sent


# ---- stopping the active run at its next step boundary -------------------------------------------
def stop_requested(services: Services, run: RunRecord) -> tuple[NextStepFailed, list[Write]] | None:
    """If the run was asked to stop (an ``interrupt``/``rollback`` of a newer run, or a cancel): the
    failure it stops with (naming the side effects it executed, which stay) and, for a rollback,
    the writes removing its messages from the thread's history. Read from the run itself
    (``RunRecord.stop_requested``, adopted by the commit the request made fail): no store read
    unless it was asked."""
    stop = run.stop_requested
    if stop is None or not run.thread_id:
        return None
    executed = [f"{a.tool} ({a.action_id})" for a in services.runs.list_actions(run.run_id)
                if a.side_effect and a.status == "completed"]
    kept = ("; side effects already executed (kept, not undone): " + ", ".join(executed)) if executed else ""
    writes: list[Write] = []
    if stop.mode == "cancel":
        return NextStepFailed(FailureCode.CANCELLED, f"cancelled by the user{kept}"), writes
    if stop.mode == "rollback":
        writes = services.runs.message_deletes(run)
        how = "rolled back (its messages left the thread's history)"
    else:
        how = "interrupted"
    message = f"{how} by run {stop.by} on the same thread{kept}"
    return NextStepFailed(FailureCode.SUPERSEDED, message), writes


# ---- cancel -------------------------------------------------------------------------------------
def _cancelled(run: RunRecord, reason: str | None) -> dict[str, Any]:
    move_run(run, "failed")
    run.error = RunError(code=FailureCode.CANCELLED,
                         message="cancelled by the user while queued" + (f": {reason}" if reason else ""))
    run.result = RunResult(ok=False, run_id=run.run_id, thread_id=run.thread_id, status="failed", model=run.model,
                           summary=run.error.message, error=run.error)
    run.updated_at = now()
    run.last_seq += 1
    return event_to_doc(ErrorEvent(seq=run.last_seq, error=run.error.message, code=FailureCode.CANCELLED))


def _cancel_session(services: Services, uid: str, run: RunRecord, session_id: str,
                    reason: str | None) -> tuple[RunRecord, bool]:
    """The run of a plan session is the session's unit of work: a cancel through the runs route is
    the session's cancel (``POST /api/agent/sessions/{id}/cancel``), so both end ``cancelled``
    together: at once before execution or while it waits for approvals, else before its next act."""
    from shared.plans import sessions as engine
    from shared.state.sessions_repo import SessionsRepo

    session = engine.cancel(services, SessionsRepo(services.runs.store), uid, session_id, reason=reason)
    now_run = services.runs.get_run_for(uid, run.run_id).run
    return now_run, not now_run.terminal and session.cancel_requested


def cancel_run(services: Services, uid: str, run_id: str, *, reason: str | None = None) -> tuple[RunRecord, bool]:
    """Cancel ``uid``'s run: a queued one leaves its queue at once (failed ``CANCELLED``); an active
    one stops at its next step boundary (``cancelling`` = True); a paused one is closed now. A run
    already cancelled is answered as it is; one that ended otherwise is 409 ``RUN_ENDED``."""
    snap = services.runs.get_run_for(uid, run_id)
    queue = thread_queue(services)
    run = snap.run
    if run.status == "queued":
        done = queue.cancel_queued(uid, run_id, lambda r: _cancelled(r, reason),
                                   [services.outbox.done(dequeue_entry_id(run_id))])
        if done is not None:
            publish_next(services, done)
            return done, False
        run = services.runs.get_run_for(uid, run_id).run
    if run.terminal:
        if run.error is not None and run.error.code == FailureCode.CANCELLED:
            return run, False
        raise Conflict(f"run {run_id} already ended ({run.status})", code="RUN_ENDED",
                       details={"runId": run_id, "status": run.status})
    if isinstance(run.host_state, PlanRunState):  # a plan session's run: cancelling it cancels the session
        return _cancel_session(services, uid, run, run.host_state.session_id, reason)
    if run.status == "awaiting_confirmation" and run.pending_approval_ids and services.runs.cancel_paused(
            run_id, stops.close_paused):
        publish_next(services, run)
        return services.runs.get_run_for(uid, run_id).run, False
    if not queue.request_stop(uid, run_id):
        raise Conflict(f"run {run_id} cannot be cancelled now ({run.status})", code="RUN_NOT_CANCELLABLE",
                       details={"runId": run_id, "status": run.status})
    return run, True
