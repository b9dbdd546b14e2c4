"""How a unit of work stops, whatever its host: each stop is one commit.

Hosts call these and add what the stop means for them (a thread message, a task record, a
seed-001 result) through ``writes`` and ``result``. ``fail`` is the one way to fail a unit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from shared.durable.kinds import CONTINUE, continue_entry_id
from shared.durable.messages import WorkMessage
from shared.events import ErrorEvent, ResultEvent, StatusEvent, UsageEvent
from shared.failures import FailureCode
from shared.loop.context import RunContext
from shared.loop.outcomes import NextStepInterruption, NextStepYield
from shared.state.docstore import Write
from shared.state.records import RunError, RunResult
from shared.state.transitions import move_run

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


def complete(ctx: RunContext, *, writes: Iterable[Write] = (), result: RunResult | None = None) -> None:
    move_run(ctx.run, "completed")
    ctx.run.result = result
    _queue(ctx, writes)
    ctx.emit(UsageEvent(usage=ctx.run.usage))
    if result is not None:
        ctx.emit(ResultEvent(result=result))
    ctx.commit()
    log_stop(ctx, "run completed")


def pause(ctx: RunContext, outcome: NextStepInterruption, *, result: RunResult | None = None) -> None:
    run = ctx.run
    move_run(run, "awaiting_confirmation")
    run.mode = "requires_approval"
    run.pending_turn = outcome.turn_index
    run.pending_approval_ids = outcome.approval_ids
    run.result = result
    ctx.emit(UsageEvent(usage=run.usage))
    if result is not None:
        ctx.emit(ResultEvent(result=result))
    ctx.commit()
    log_stop(ctx, "run paused for approval", approvals=len(outcome.waiting))


def fail(ctx: RunContext, code: FailureCode, message: str, *, writes: Iterable[Write] = (),
         result: RunResult | None = None) -> None:
    run = ctx.run
    move_run(run, "failed")
    run.error = RunError(code=code, message=message)
    if result is not None:
        result.error = run.error
    run.result = result
    _queue(ctx, writes)
    ctx.emit(UsageEvent(usage=run.usage))
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
    ctx.write(outbox.record(WorkMessage(kind=CONTINUE, unitId=run.run_id, uid=run.uid), entry_id))
    ctx.emit(StatusEvent(status=run.status, threadId=run.thread_id, runId=run.run_id))
    ctx.commit(park=True)
    log_stop(ctx, "run yielded", reason=outcome.reason)
    outbox.deliver(entry_id)
    return entry_id
