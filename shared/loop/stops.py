"""How a unit of work stops, whatever its host: each stop is one commit.

Hosts call these and add what the stop means for them (a thread message, a task record, a
seed-001 result) through ``writes`` and ``result``. ``fail`` is the one way to fail a unit an
invocation holds; ``close_paused`` ends a paused unit no invocation holds, inside another
transaction (the state package performs its writes).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from shared.durable.kinds import CONTINUE, continue_entry_id
from shared.durable.messages import WorkMessage, paused_hint
from shared.events import ErrorEvent, ResultEvent, StatusEvent, UsageEvent, event_to_doc
from shared.failures import FailureCode
from shared.loop.context import RunContext
from shared.loop.outcomes import NextStepInterruption, NextStepYield
from shared.state.docstore import Write
from shared.state.paused_runs import CloseReason
from shared.state.records import RunError, RunRecord, RunResult, now
from shared.state.runs_repo import RunsRepo
from shared.state.transitions import move_run

if TYPE_CHECKING:
    from shared.events.run import RunEvent

log = logging.getLogger("agent_runtime.agent")



def log_stop(ctx: RunContext, message: str, level: int = logging.INFO, **fields: object) -> None:
    """One line per stop: ids (bound by the caller's log context), outcome, counts; never payloads."""
    run = ctx.run
    log.log(level, message, extra={"fields": {
        "runId": run.run_id, "threadId": run.thread_id, "host": run.host, "status": run.status, "mode": run.mode,
        "steps": run.steps, "toolsExecuted": run.tools_executed, "modelCalls": run.usage.requests,
        "totalTokens": run.usage.total_tokens, "thinkingTokens": run.usage.thinking_tokens, **fields}})


def _queue(ctx: RunContext, writes: Iterable[Write]) -> None:
    for w in writes:
        ctx.write(w)


def complete(ctx: RunContext, *, writes: Iterable[Write] = (), result: RunResult | None = None,
             final: Iterable[RunEvent] = (), status: Literal["completed", "rejected"] = "completed") -> None:
    """``final``: the host's own closing events, sent after the run's ``usage`` (a plan's status and
    outcome). ``status``: how the work ended (a plan whose user refused acts a task needed: ``rejected``)."""
    move_run(ctx.run, status)
    ctx.run.result = result
    _queue(ctx, writes)
    ctx.emit(UsageEvent(usage=ctx.run.usage))
    for event in final:
        ctx.emit(event)
    if result is not None:
        ctx.emit(ResultEvent(result=result))
    ctx.commit()
    log_stop(ctx, "run completed")


def pause(ctx: RunContext, outcome: NextStepInterruption, *, result: RunResult | None = None,
          announce: bool = True) -> None:
    """``announce=False``: the pause is not the end of what a client follows (the run waits on a
    unit it started, whose events are relayed): ``result`` is recorded but sent as no event."""
    run = ctx.run
    move_run(run, "awaiting_confirmation")
    # Nobody is asked when every waiting call waits on a unit it started (a plan): not a confirmation.
    run.mode = "requires_approval" if outcome.approval_ids else "executing_plan"
    run.pending_turn = outcome.turn_index
    run.pending_approval_ids = outcome.approval_ids
    run.paused_action_ids = ctx.resume_action_ids(outcome.turn_index)
    # The sweep's query key: only a pause asking someone can expire (a plan's confirmation cannot).
    expiries = [r.expires_at for a in outcome.waiting if (r := ctx.approval_record(a)) is not None]
    run.pause_expires_at = max(expiries) if expiries else None
    run.result = result
    ctx.emit(UsageEvent(usage=run.usage))
    if result is not None and announce:
        ctx.emit(ResultEvent(result=result))
    ctx.commit()
    log_stop(ctx, "run paused for approval", approvals=len(outcome.waiting))


FailedStatus = Literal["failed", "deadline_exceeded", "cancelled"]
"""How a unit that did not finish its work ended: ``failed``, or (a plan's run, with its session)
``deadline_exceeded`` / ``cancelled``."""


def _failed(run: RunRecord, code: FailureCode, message: str, status: FailedStatus = "failed") -> None:
    move_run(run, status)
    run.error = RunError(code=code, message=message)


def fail(ctx: RunContext, code: FailureCode, message: str, *, writes: Iterable[Write] = (),
         result: RunResult | None = None, final: Iterable[RunEvent] = (), status: FailedStatus = "failed") -> None:
    run = ctx.run
    _failed(run, code, message, status)
    if result is not None:
        result.error = run.error
    run.result = result
    _queue(ctx, writes)
    ctx.emit(UsageEvent(usage=run.usage))
    for event in final:  # the host's own closing events, before the error that ends the log
        ctx.emit(event)
    ctx.emit(ErrorEvent(error=message, code=code))
    # Logged before the commit: a store that cannot record the failure must not hide that it happened.
    log_stop(ctx, f"run failed: {code}", logging.WARNING, code=code)
    ctx.commit()


def park(ctx: RunContext, outcome: NextStepYield) -> str:
    """Yield: commit with a parked lease and a ``continue`` message in the outbox, then publish it.
    Returns the outbox entry id. The next invocation claims the unit and goes on from the store."""
    run = ctx.run
    outbox = ctx.services.outbox
    entry_id = continue_entry_id(run.run_id, run.steps)
    run.turn_count = len(ctx.turns)  # as the commit below records it: the message names what to read
    message = WorkMessage(kind=CONTINUE, unitId=run.run_id, uid=run.uid, traceparent=run.trace_parent,
                          paused=resume_hint(run))
    ctx.write(outbox.record(message, entry_id))
    ctx.emit(StatusEvent(status=run.status, threadId=run.thread_id, runId=run.run_id))
    ctx.commit(park=True)
    log_stop(ctx, "run yielded", reason=outcome.reason)
    outbox.deliver_recorded(message, entry_id)
    return entry_id


def resume_hint(run: RunRecord) -> str | None:
    """The hint (``WorkMessage.paused``) a message resuming ``run`` as it is now carries, so its
    resume reads what the run names with the run in one round trip (issue 33; checked against the
    run it reads, never trusted). None when a resume of it queries instead."""
    named = RunsRepo.resume_hint(run)
    return None if named is None else paused_hint(*named)


def close_reason(reason: CloseReason, by_run: str) -> tuple[FailureCode, str]:
    """Why a paused unit closed by someone else fails."""
    if reason == "expired":
        return FailureCode.APPROVAL_EXPIRED, (
            f"its approval expired; closed when run {by_run} started on the thread" if by_run
            else "its approvals expired; closed by the sweep")
    if reason == "cancelled":
        return FailureCode.CANCELLED, "cancelled by the user"
    if reason == "deadline_exceeded":
        return FailureCode.DEADLINE_EXCEEDED, "the session's deadline passed while it waited"
    return FailureCode.SUPERSEDED, f"superseded by run {by_run} on the same thread"


def close_paused(run: RunRecord, reason: CloseReason, by_run: str, *, status: FailedStatus = "failed"
                 ) -> dict[str, Any]:
    """End a paused unit no invocation holds (``state.paused_runs.FailPaused``): it ends ``status``
    for ``reason`` (``APPROVAL_EXPIRED``, ``SUPERSEDED``, ``CANCELLED``, ``DEADLINE_EXCEEDED``), its
    pause and lease are dropped, its result says so; returns its ``error`` event. The caller's
    transaction writes the run and the event."""
    code, message = close_reason(reason, by_run)
    _failed(run, code, message, status)
    run.updated_at = now()
    run.lease, run.lease_expires_at = None, 0.0
    run.pending_approval_ids, run.pending_turn, run.paused_action_ids = [], None, None
    if run.result is not None:
        run.result = run.result.model_copy(update={"ok": False, "status": status, "summary": message,
                                                   "error": run.error})
    run.last_seq += 1
    log.warning("paused run closed: %s", code, extra={"fields": {"runId": run.run_id, "host": run.host,
                                                                  "code": code, "reason": reason}})
    return event_to_doc(ErrorEvent(seq=run.last_seq, error=message, code=code))
