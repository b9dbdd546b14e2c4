"""The chat run host (seed 001): what the loop's stops mean for a conversation run.

A final output becomes the thread's assistant message and the run's seed-001 result; every stop
for good releases the thread; a pause carries the approvals in the result; a spent budget fails
the run (seed 001 semantics: ``STEP_LIMIT``, ``DEADLINE_EXCEEDED``).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shared.durable.kinds import plan_entry_id
from shared.events.loop import AgentStateName, agent_state_doc
from shared.failures import FailureCode
from shared.ids import new_id
from shared.loop import stops
from shared.loop.context import RunContext
from shared.loop.host import Host
from shared.loop.outcomes import NextStepFailed, NextStepInterruption, StopOutcome
from shared.state.docstore import Write
from shared.state.host_states import ChatState, expect
from shared.state.records import (
    MessageRecord,
    OutputFile,
    RunError,
    RunRecord,
    RunResult,
    UsageEntry,
    now,
)
from shared.tools.registry import Tool

if TYPE_CHECKING:
    from shared.agent.webhooks import RunEventType
    from shared.state.sessions_repo import SessionsRepo

log = logging.getLogger("agent_runtime.agent")

MAX_SUMMARY_CHARS = 4000


def current_result(run: RunRecord) -> RunResult:
    """The run's result as of its last stop, or its in-progress state."""
    if run.result is not None:
        return run.result
    return RunResult(ok=True, run_id=run.run_id, thread_id=run.thread_id, status=run.status, model=run.model,
                     summary="the run is in progress")


def _base_result(ctx: RunContext) -> RunResult:
    last = ctx.last_action
    return RunResult(ok=True, run_id=ctx.run.run_id, thread_id=ctx.run.thread_id, status=ctx.run.status,
                     model=ctx.run.model, action_id=last.action_id if last else None,
                     tool=last.tool if last else None, tool_args=last.args if last else None)


def output_files(ctx: RunContext) -> list[OutputFile]:
    """The files of the run's final model turn (their bytes stay in the stored turn)."""
    import mimetypes

    index = len(ctx.turns) - 1
    if index < 0 or ctx.turns[index].role != "model":
        return []
    out: list[OutputFile] = []
    for i, part in enumerate(ctx.turns[index].parts):
        if part.inline_data is not None:
            blob = part.inline_data
            name, mime, uri = blob.display_name, blob.mime_type, None
            size: int | None = len(blob.data) * 3 // 4 - blob.data[-2:].count("=")
        elif part.file_data is not None:
            ref = part.file_data
            name, mime, uri, size = ref.display_name, ref.mime_type or "application/octet-stream", ref.file_uri, None
        else:
            continue
        name = name or f"file-{len(out) + 1}{mimetypes.guess_extension(mime) or ''}"
        out.append(OutputFile(name=name, media_type=mime, size_bytes=size, uri=uri,
                              turn=None if uri else index, part=None if uri else i))
    return out


def watchdog_entry(ctx: RunContext) -> UsageEntry:
    at = now()
    return UsageEntry(entry_id=f"{ctx.run.run_id}-{ctx.run.steps:05d}-{new_id('wd')}", uid=ctx.run.uid,
                      unit_kind="run", unit_id=ctx.run.run_id, component="watchdog", operation_type="planner_stream",
                      profile=ctx.run.profile, context_type=ctx.run.context_type,
                      model=ctx.run.model, step=ctx.run.steps, outcome="error", error_code="DEADLINE_EXCEEDED",
                      at=at, day=datetime.fromtimestamp(at, UTC).date().isoformat())


def chat_state(ctx: RunContext) -> ChatState:
    """The chat host's state of the run (``state/host_states.py``)."""
    return expect(ctx.run.host_state, ChatState)


def _release(ctx: RunContext) -> Write:
    return ctx.services.runs.release_thread_write(
        ctx.run, mode=ctx.run.context_type,
        execution_modes=list(chat_state(ctx).execution_modes) or None)


def _announce(ctx: RunContext, event: RunEventType, result: RunResult) -> list[str]:
    """The run's webhook deliveries of this stop, recorded in its commit (``agent/webhooks``), and
    its A2A task's push notifications (``agent/a2a_push``: only runs of A2A contexts look). The
    webhook modules are imported only when something may be announced (cold start: webhooks are
    free when off): the run has its own URL, runs in an A2A context, or its owner's ``webhooks``
    stamp is not 0 (unknown or moved: their list is read)."""
    a2a = ctx.run.thread_id.startswith("a2a_")
    if not ctx.run.webhook and not a2a and ctx.stamps is not None and ctx.stamps.version("webhooks") == 0:
        return []  # what ``Webhooks.announce`` records then: nothing (the stamp says no webhook, no query)
    from shared.agent.webhooks import Webhooks

    webhooks = Webhooks(ctx.services)
    ids = webhooks.announce(ctx, event, result)
    if a2a:
        from shared.agent.a2a_push import announce

        ids += announce(ctx, result, webhooks.deliverer())
    return ids


def _published(ctx: RunContext, deliveries: list[str]) -> None:
    if deliveries:
        from shared.agent.webhooks import Webhooks

        Webhooks(ctx.services).deliverer().publish(deliveries)


def _next_run(ctx: RunContext) -> None:
    """The thread is free: its next queued run starts (``run_queue``), when one was queued behind
    this run (``RunRecord.queued_behind``): a run nothing queued behind reads no thread (issue 33)."""
    if not ctx.run.queued_behind:
        return
    from shared.agent.run_queue import publish_next

    publish_next(ctx.services, ctx.run)


def _state(ctx: RunContext, state: AgentStateName, details: str | None = None) -> None:
    """Send ``agent_state`` when the loop switches to ``state``."""
    chat = chat_state(ctx)
    if chat.agent_state == state:
        return
    chat.agent_state = state
    ctx.emit(agent_state_doc(state, ctx.run.context_type or "general", details))


class ChatHost(Host):
    kind = "chat"

    def __init__(self, virtual: dict[str, Tool] | None = None, sessions: SessionsRepo | None = None) -> None:
        self._virtual = virtual or {}
        self._sessions = sessions

    def virtual_tools(self, ctx: RunContext) -> dict[str, Tool]:
        if not ctx.run.client_tools:
            return self._virtual
        from shared.loop.client_tools import client_tools

        return {**client_tools(ctx.run.client_tools), **self._virtual}

    def resumed(self, ctx: RunContext) -> None:
        """The plan the run waited on ended: its relayed events become the run's own, numbered as
        readers showed them while it ran (``plan_relay``), before anything else of this invocation."""
        chat = chat_state(ctx)
        if chat.relay_plan_id is None or self._sessions is None:
            return
        from shared.agent.plan_relay import relayed_events

        for event in relayed_events(self._sessions, ctx.services.runs, chat.relay_plan_id):
            ctx.emit(event)
        # The plan's message that woke the run has done its job: its entry goes with the claim (the
        # router then need not read it, issue 33), as a yield's or a decision's does.
        ctx.write(ctx.services.outbox.done(plan_entry_id(chat.relay_plan_id)))
        chat.relay_plan_id = None


    def before_step(self, ctx: RunContext) -> StopOutcome | None:
        limit = ctx.services.settings.max_tool_calls_per_turn
        if ctx.run.tools_called >= limit:
            # Seed 003 §4.2: at most N tool calls per user turn in total; the incident is logged with
            # a stable schema (component, stage) so it can be counted.
            log.warning("tool call limit reached", extra={"fields": {
                "component": "planner_loop", "stage": "tool_call_limit", "runId": ctx.run.run_id,
                "toolCalls": ctx.run.tools_called, "contextType": ctx.run.context_type}})
            return NextStepFailed(FailureCode.TOOL_CALL_LIMIT,
                                  f"this request needed more than {limit} tool calls "
                                  "(AGENT_MAX_TOOL_CALLS_PER_TURN); rephrase it more narrowly, or wait and ask again")
        if ctx.run.stop_requested is not None:  # run control's module only when a stop was asked
            from shared.agent.run_queue import stop_requested

            stop = stop_requested(ctx.services, run=ctx.run)
            if stop is not None:  # a newer run interrupted this one, or its owner cancelled it
                failure, writes = stop
                ctx.write(*writes)
                return failure
        _state(ctx, "thinking")
        return None

    def confirm_reason(self, ctx: RunContext, tool: str, args: dict[str, Any]) -> str | None:
        """A call outside the entity in scope (a project's or task's run), or, in an A2A task, a call
        through an integration its user has not connected (``auth-required``, docs/a2a.md)."""
        run = ctx.run
        unconnected = _unconnected(ctx, tool) if run.thread_id.startswith(A2A_THREAD) else None
        if unconnected is not None:
            return unconnected
        if not run.entity_id or run.context_type not in ("project", "task"):
            return None
        from shared.projects.scope import entity_scope

        scope = entity_scope(ctx.services.users.store, run.uid, run.entity_id)
        outside = "the entity is gone" if scope is None else scope.outside_reason(tool, args)
        return None if outside is None else f"outside the entity in scope: {outside}"

    def before_tool(self, ctx: RunContext, tool: str) -> None:
        _state(ctx, "executing_tool", tool)

    def finish(self, ctx: RunContext, text: str) -> None:
        run = ctx.run
        run.mode = "tool_executed" if run.tools_executed > 0 else "assistant_text"
        result = _base_result(ctx)
        files = output_files(ctx)
        # An answer that is only files is told by their names (the thread's history keeps that).
        said = text if text.strip() or not files else "Files: " + ", ".join(f"{f.name} ({f.media_type})"
                                                                             for f in files)
        result.status, result.mode, result.summary = "completed", run.mode, said[:MAX_SUMMARY_CHARS]
        result.files = files or None
        output: dict[str, object] = {"text": text}
        if ctx.last_action is not None and ctx.last_action.result is not None:
            output["toolResult"] = ctx.last_action.result
        result.output = output
        message = MessageRecord(id=ctx.services.new_id("msg"), role="assistant", text=said, run_id=run.run_id)
        runs = ctx.services.runs
        deliveries = _announce(ctx, "run.completed", result)
        stops.complete(ctx, result=result, writes=[runs.message_write(run, message),
                                                   _release(ctx)])
        _published(ctx, deliveries)
        _next_run(ctx)

    def interrupt(self, ctx: RunContext, outcome: NextStepInterruption) -> None:
        run = ctx.run
        approvals = [a for a in outcome.waiting if a.approval_id]
        first = approvals[0] if approvals else outcome.waiting[0]
        views = ctx.waiting_approvals(approvals)
        if views:
            summary = f"Waiting for approval: {views[0].preview}"
            _state(ctx, "waiting_on_user", "approval")
        else:  # a virtual tool waits for a child unit: the plan it started runs on
            summary = f"Executing a plan ({first.tool}); the run goes on when it ends"
            _state(ctx, "executing_plan", chat_state(ctx).plan_id or "")
        result = RunResult(ok=True, run_id=run.run_id, thread_id=run.thread_id,
                           status="awaiting_confirmation" if views else "executing",
                           model=run.model, mode="requires_approval" if views else "executing_plan",
                           action_id=first.action_id, tool=first.tool,
                           tool_args=first.args, approval=views[0] if views else None, approvals=views or None,
                           summary=summary,
                           follow=None if views else f"/api/agent/runs/{run.run_id}/events?follow=1&until=end")
        deliveries = _announce(ctx, "run.awaiting_approval", result) if views else []
        # A run waiting on its plan sends no ``result``: its stream goes on with the plan's events.
        stops.pause(ctx, outcome, result=result, announce=bool(views))
        _published(ctx, deliveries)

    def fail(self, ctx: RunContext, code: FailureCode, message: str) -> None:
        if code == FailureCode.DEADLINE_EXCEEDED:  # the watchdog: its timeout is in the usage ledger too
            ctx.write(*ctx.services.usage.entry_writes(watchdog_entry(ctx)))
        result = _base_result(ctx)
        result.ok, result.status, result.summary = False, "failed", message
        result.mode = ctx.run.mode or "assistant_text"
        result.error = RunError(code=code, message=message)
        deliveries = _announce(ctx, "run.failed", result)
        stops.fail(ctx, code, message, writes=[_release(ctx)],
                   result=result)
        _published(ctx, deliveries)
        _next_run(ctx)


A2A_THREAD = "a2a_"
"""The threads of A2A contexts (``shared/agent/a2a_convert.py``, ``thread_for``)."""


def _unconnected(ctx: RunContext, tool: str) -> str | None:
    """Why a call of ``tool`` waits in an A2A task: it acts through an integration (``Tool.connector``)
    that the run's user has not connected. The task then reads ``auth-required`` (A2A 1.0 §7.6) and
    its status message says what to connect, instead of the call failing "not connected"; once
    connected, the caller's "approve" runs it. One read of the integration per such call, in A2A
    tasks only; unknown (no credentials key): nothing is claimed."""
    registered = ctx.registry.get(tool)
    provider = registered.connector if registered is not None else None
    connectors = ctx.services.connectors
    if provider is None or connectors is None:
        return None
    try:
        if connectors().vault.status(ctx.run.uid, provider).connected:
            return None
    except Exception:  # like a2a_convert.missing_for: unknown is not "missing"
        return None
    return (f"it acts through {provider}, which the user has not connected: connect it "
            f"(POST /api/integrations/{provider}), then approve")

