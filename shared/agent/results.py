"""How a run stops: completed, paused for approvals, or failed. Each stop is one commit."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from shared.agent.context import RunContext
from shared.events import ErrorEvent, ResultEvent, UsageEvent
from shared.state import paths
from shared.state.docstore import Write
from shared.state.records import (
    ActionRecord,
    ApprovalView,
    MessageRecord,
    RunError,
    RunRecord,
    RunResult,
    now,
)

log = logging.getLogger("agent_runtime.agent")

MAX_SUMMARY_CHARS = 4000


def current_result(run: RunRecord) -> RunResult:
    """The run's result as of its last stop, or its in-progress state."""
    if run.result is not None:
        return run.result
    return RunResult(ok=True, run_id=run.run_id, thread_id=run.thread_id, status=run.status, model=run.model,
                     summary="the run is in progress")


def _release_thread(ctx: RunContext) -> None:
    ctx.write(Write("update", paths.thread(ctx.run.thread_id), {"activeRunId": None, "updatedAt": now()}))


def _log_stop(ctx: RunContext, message: str, level: int = logging.INFO, **fields: object) -> None:
    """One line per stop: ids (bound by the caller's log context), outcome, counts; never payloads."""
    run = ctx.run
    log.log(level, message, extra={"fields": {
        "runId": run.run_id, "threadId": run.thread_id, "status": run.status, "mode": run.mode,
        "steps": run.steps, "toolsExecuted": run.tools_executed, "modelCalls": len(run.model_calls),
        "totalTokens": run.usage.total_tokens, "thinkingTokens": run.usage.thinking_tokens, **fields}})


def _base_result(ctx: RunContext) -> RunResult:
    last = ctx.last_action
    return RunResult(ok=True, run_id=ctx.run.run_id, thread_id=ctx.run.thread_id, status=ctx.run.status,
                     model=ctx.run.model, action_id=last.action_id if last else "",
                     tool=last.tool if last else None, tool_args=last.args if last else None)


def complete_run(ctx: RunContext, text: str) -> None:
    run = ctx.run
    run.status = "completed"
    run.mode = "tool_executed" if run.tools_executed > 0 else "assistant_text"
    result = _base_result(ctx)
    result.mode = run.mode
    result.summary = text[:MAX_SUMMARY_CHARS]
    output: dict[str, object] = {"text": text}
    if ctx.last_action is not None and ctx.last_action.result is not None:
        output["toolResult"] = ctx.last_action.result
    result.output = output
    run.result = result
    message = MessageRecord(id=ctx.services.new_id("msg"), role="assistant", text=text, run_id=run.run_id)
    ctx.write(Write("create", paths.message(run.thread_id, message.id), message.to_doc()))
    _release_thread(ctx)
    ctx.emit(UsageEvent(usage=run.usage))
    ctx.emit(ResultEvent(result=result))
    ctx.commit()
    _log_stop(ctx, "run completed")


def pause_for_approvals(ctx: RunContext, turn_index: int, waiting: Sequence[ActionRecord]) -> None:
    run = ctx.run
    run.status = "awaiting_confirmation"
    run.mode = "requires_approval"
    run.pending_turn = turn_index
    run.pending_approval_ids = [a.approval_id for a in waiting if a.approval_id]
    first = waiting[0]
    views = [ApprovalView(id=a.approval_id or "", tool=a.tool, reason=a.policy_reason or "",
                          preview=_preview_of(ctx, a)) for a in waiting]
    result = RunResult(ok=True, run_id=run.run_id, thread_id=run.thread_id, status=run.status, model=run.model,
                       mode="requires_approval", action_id=first.action_id, tool=first.tool,
                       tool_args=first.args, approval=views[0], approvals=views,
                       summary=f"Waiting for approval: {views[0].preview}")
    run.result = result
    ctx.emit(UsageEvent(usage=run.usage))
    ctx.emit(ResultEvent(result=result))
    ctx.commit()
    _log_stop(ctx, "run paused for approval", approvals=len(views))


def _preview_of(ctx: RunContext, action: ActionRecord) -> str:
    tool = ctx.services.registry.get(action.tool)
    if tool is None:
        return action.tool
    return tool.preview(tool.validate(action.args))


def fail_run(ctx: RunContext, code: str, message: str) -> None:
    run = ctx.run
    run.status = "failed"
    run.error = RunError(code=code, message=message)
    result = _base_result(ctx)
    result.ok = False
    result.summary = message
    result.error = run.error
    result.mode = run.mode or "assistant_text"
    run.result = result
    _release_thread(ctx)
    ctx.emit(UsageEvent(usage=run.usage))
    ctx.emit(ErrorEvent(error=message, code=code))
    # Logged before the commit: a store that cannot record the failure must not hide that it happened.
    _log_stop(ctx, f"run failed: {code}", logging.WARNING, code=code)
    ctx.commit()
