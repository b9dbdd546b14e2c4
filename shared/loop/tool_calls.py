"""Tool calls of one model turn: validate, decide under policy, execute with a claim, answer.

A side-effecting tool is claimed (action ``executing``, committed) before it runs, so a crash or
a concurrent invocation can never run it twice; read-only tools run without a claim.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from shared import policy, tracing
from shared.errors import OutcomeUnknown, ToolError
from shared.events import ToolCallEvent, ToolResultEvent
from shared.events.loop import tool_call_doc, tool_result_doc
from shared.failures import FailureCode
from shared.loop.client_tools import CLIENT_REASON, is_client_tool
from shared.loop.context import RunContext
from shared.loop.virtual import VirtualOutcome, run_virtual
from shared.models.base import FunctionCall, FunctionResponse, Part, Turn
from shared.state.records import ActionRecord, ActOutcome, ApprovalRecord, now
from shared.state.transitions import move_action, move_run
from shared.tools.context import ToolContext
from shared.tools.registry import Tool, ToolArgsError, args_hash

if TYPE_CHECKING:
    from shared.usage.budget import Overrun

log = logging.getLogger("agent_runtime.tools")

MAX_RESULT_CHARS = 20_000


def lookup(ctx: RunContext, name: str) -> Tool | None:
    """The tool a call names: the host's virtual tool of that name, else the registry's."""
    return ctx.host.virtual_tools(ctx).get(name) or ctx.registry.get(name)


def decide_calls(ctx: RunContext, turn_index: int, calls: Sequence[FunctionCall], *,
                 validated: dict[str, BaseModel] | None = None) -> list[ActionRecord] | tuple[FailureCode, str]:
    """One action per call, decided under policy; ``(code, message)`` when the unit must fail.

    Nothing executes before every call of the turn is known to be valid. Virtual tools
    (``loop/virtual.py``) take the same path: no policy decision of their own, and a malformed
    call is answered with its problems once per run instead of failing it. ``validated``, when
    given, receives each valid call's arguments as validated, by action id (:func:`execute_action`
    runs it with them instead of validating them again).
    """
    s = ctx.services
    actions: list[ActionRecord] = []
    ctx.run.tools_called += len(calls)
    for i, fc in enumerate(calls):
        action = ActionRecord(action_id=s.new_id("act"), run_id=ctx.run.run_id, uid=ctx.run.uid, tool=fc.name,
                              args=dict(fc.args), args_hash=args_hash(dict(fc.args)), turn_index=turn_index,
                              call_index=i, call_id=fc.id)
        tool = lookup(ctx, fc.name)
        if tool is not None and not tool.host and not ctx.host.allows(ctx, fc.name):
            tool = None
        if tool is None:
            move_action(action, "failed")
            action.outcome, action.error = "error", f"unknown tool {fc.name!r}"
            ctx.put_action(action)
            return FailureCode.UNKNOWN_TOOL, f"the model called an unknown tool: {fc.name!r}"
        action.side_effect, action.idempotent = tool.side_effect, tool.idempotent
        try:
            args = tool.validate(action.args)
        except ToolArgsError as exc:
            failed = _malformed(ctx, action, tool, exc)
            if failed is not None:
                return failed
            actions.append(action)
            continue
        if is_client_tool(tool):  # answered by the client: the run waits for it like for a decision
            decision = policy.PolicyDecision("require_approval", CLIENT_REASON)
            action.policy_reason = decision.reason
        elif tool.host:
            decision = policy.PolicyDecision("allow", VIRTUAL_REASON)
        else:
            decision = policy.decide(tool_name=tool.name, side_effect=tool.side_effect, args=args, user=ctx.user,
                                     side_effects_enabled=s.settings.side_effects_enabled,
                                     recipients=tool.recipients_fn)
            confirm = ctx.host.confirm_reason(ctx, tool.name, dict(fc.args)) if decision.verdict == "allow" else None
            if confirm is not None:
                decision = policy.PolicyDecision("require_approval", confirm)
            action.policy_reason = decision.reason
        ctx.audit(ctx.new_audit(kind="policy_decision", action_id=action.action_id, tool=tool.name,
                                decision=decision.verdict, reason=decision.reason))
        if decision.verdict == "deny":
            move_action(action, "rejected")
            action.outcome, action.error = "rejected", f"denied by policy: {decision.reason}"
            ctx.emit(ToolCallEvent(toolName=tool.name, preview=tool.preview(args), actionId=action.action_id,
                                   status="rejected", args=dict(action.args)))
            ctx.emit(ToolResultEvent(toolName=tool.name, actionId=action.action_id, status="rejected",
                                     error=action.error))
        elif decision.verdict == "require_approval":
            preview = tool.preview(args)
            session_id, task_id = ctx.host.approval_subject(ctx)
            approval = ApprovalRecord(approval_id=s.new_id("apr"), uid=ctx.run.uid, run_id=ctx.run.run_id,
                                      action_id=action.action_id, tool=tool.name, args_hash=action.args_hash,
                                      reason=decision.reason, preview=preview,
                                      expires_at=now() + s.settings.approval_ttl_s,
                                      session_id=session_id, task_id=task_id)
            approval.expire_at = approval.expires_at + s.settings.event_retention_s
            move_action(action, "awaiting_confirmation")
            action.approval_id = approval.approval_id
            ctx.ask(approval)
            ctx.audit(ctx.new_audit(kind="approval_requested", action_id=action.action_id,
                                    approval_id=approval.approval_id, tool=tool.name, reason=decision.reason))
            ctx.emit(ToolCallEvent(toolName=tool.name, preview=preview, actionId=action.action_id,
                                   status="awaiting_confirmation", args=dict(action.args)))
        ctx.put_action(action)
        actions.append(action)
        if validated is not None:
            validated[action.action_id] = args
    return actions


VIRTUAL_REASON = "virtual tool (handled by the host)"
"""The policy decision of a virtual tool's call (a client tool's: ``client_tools.CLIENT_REASON``)."""


def _malformed(ctx: RunContext, action: ActionRecord, tool: Tool, exc: ToolArgsError
               ) -> tuple[FailureCode, str] | None:
    """A call whose arguments do not match the declaration fails the unit; a virtual tool's is
    answered with the problems, once per run (a second malformed call fails it)."""
    move_action(action, "failed")
    action.outcome, action.error = "error", str(exc)
    if not tool.host:
        ctx.put_action(action)
        return FailureCode.INVALID_TOOL_ARGS, str(exc)
    seen = ctx.run.virtual_arg_errors
    ctx.run.virtual_arg_errors = seen + 1
    action.error = f"{exc}; fix the arguments and call {tool.name} again"
    ctx.put_action(action)
    if seen >= 1:
        return FailureCode.INVALID_TOOL_ARGS, f"{tool.name} was called with malformed arguments twice: {exc}"
    return None


_RESULT_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""``json.dumps(..., ensure_ascii=False, default=str)``, built once (every tool result goes through it)."""


def bounded_result(result: dict[str, Any]) -> dict[str, Any]:
    """A tool's result as stored and shown to the model (long results are cut, with a note)."""
    text = _RESULT_JSON.encode(result)
    if len(text) <= MAX_RESULT_CHARS:
        return json.loads(text)  # type: ignore[no-any-return]
    return {"truncated": True, "note": f"the result was {len(text)} characters; showing the start",
            "partial": text[:MAX_RESULT_CHARS]}


def tool_context(ctx: RunContext, action: ActionRecord) -> ToolContext:
    """What a tool (or its reconciliation) gets for ``action``: the action id is its idempotency key."""
    s = ctx.services
    return ToolContext(uid=ctx.run.uid, run_id=ctx.run.run_id, action_id=action.action_id, users=s.users,
                       settings=s.settings, connectors=s.connectors() if s.connectors else None,
                       usage=ctx.charge, model=s.model_factory, room=lambda max_usd: _room(ctx, max_usd),
                       deadline=ctx.deadline)


def _room(ctx: RunContext, max_usd: float) -> Overrun | None:
    """A tool's own model call checked against the run's budget and reserved against the user's
    caps, like the loop's (``budget_pause.room``; loaded only by a tool that calls a model)."""
    from shared.loop.budget_pause import room

    return room(ctx, max_usd)


def execute_action(ctx: RunContext, action: ActionRecord, validated: BaseModel | None = None) -> None:
    """Run an allowed or approved action once, with exactly the arguments it was decided on
    (``validated``: those arguments as :func:`decide_calls` validated them in this invocation)."""
    tool = lookup(ctx, action.tool)
    if tool is None:  # the registry changed between decision and execution (a deploy)
        move_action(action, "failed")
        action.outcome, action.error = "error", f"tool {action.tool!r} is not available"
        ctx.put_action(action)
        return
    args = validated if validated is not None else tool.validate(action.args)
    if not tool.host:
        ctx.host.before_tool(ctx, tool.name)
    ctx.emit(tool_call_doc(tool.name, tool.preview(args), action.action_id, "executing", action.args))
    move_action(action, "executing")
    action.attempts += 1
    with tracing.tool_call(action, conversation_id(ctx)):
        if tool.host:
            if _answer(ctx, action, tool, args) is None:  # the turn waits for the child unit the call started
                return
        else:
            _run(ctx, action, tool, args)
    ctx.emit(tool_result_doc(tool.name, action.action_id, "completed" if action.status == "completed" else "failed",
                             output=action.result, error=action.error))
    if not tool.host:
        move_run(ctx.run, "planning")
    ctx.last_action = action
    ctx.put_action(action)


def conversation_id(ctx: RunContext) -> str | None:
    """The run's thread (``gen_ai.conversation.id``); a plan's execution unit has none of its own."""
    return ctx.run.thread_id if ctx.run.host == "chat" else None


def _answer(ctx: RunContext, action: ActionRecord, tool: Tool, args: BaseModel) -> VirtualOutcome | None:
    """A virtual tool's answer on ``action``; None when the call waits for a child unit."""
    try:
        outcome = run_virtual(tool, ctx, action, args)
    except Exception as exc:
        log.error("virtual tool %s failed: %s", tool.name, type(exc).__name__,
                  extra={"fields": {"runId": ctx.run.run_id, "tool": tool.name, "component": "virtual_tool",
                                    "stage": "execute", "frames": traceback.format_tb(exc.__traceback__)}})
        outcome = VirtualOutcome(error=f"{tool.name} failed unexpectedly ({type(exc).__name__})")
    if outcome.waiting:
        move_action(action, "awaiting_confirmation")
        ctx.put_action(action)
        return None
    if outcome.error is not None:
        move_action(action, "failed")
        action.outcome, action.error = "error", outcome.error
    else:
        move_action(action, "completed")
        action.outcome, action.result = "success", bounded_result(outcome.result or {})
    return outcome


def _run(ctx: RunContext, action: ActionRecord, tool: Tool, args: BaseModel) -> None:
    """A registry tool's run on ``action``; a side effect is claimed (committed) first and audited."""
    ctx.put_action(action)
    if tool.side_effect:
        ctx.audit(ctx.new_audit(kind="side_effect_attempt", action_id=action.action_id, tool=tool.name,
                                approval_id=action.approval_id))
        move_run(ctx.run, "executing")
        ctx.commit()  # the claim: from here on a crash leaves the action 'executing', never re-run
    try:
        action.result = bounded_result(tool.run(tool_context(ctx, action), args))
        move_action(action, "completed")
        action.outcome = "success"
        ctx.run.tools_executed += 1
    except OutcomeUnknown as exc:  # the request went out, its answer was lost: never repeated
        move_action(action, "failed")
        action.outcome, action.error = "unknown", str(exc)
    except ToolError as exc:
        move_action(action, "failed")
        action.outcome, action.error = "error", str(exc)
    except Exception as exc:
        # The exception's text may quote argument values (user data): type and place only.
        log.error("tool %s failed unexpectedly: %s", tool.name, type(exc).__name__,
                  extra={"fields": {"runId": ctx.run.run_id, "actionId": action.action_id, "tool": tool.name,
                                    "component": "tool", "stage": "execute",
                                    "frames": traceback.format_tb(exc.__traceback__)}})
        move_action(action, "failed")
        action.outcome = "error"
        action.error = f"the tool failed unexpectedly ({type(exc).__name__})"
    if tool.side_effect:
        ctx.audit(ctx.new_audit(kind="side_effect_result", action_id=action.action_id, tool=tool.name,
                                decision=action.outcome, reason=action.error))


def act_outcome(action: ActionRecord) -> ActOutcome:
    """How an answered call ended, in the one word of acts (``records.ActOutcome``)."""
    if action.status == "completed":
        return "ok"
    if action.status == "rejected":
        return "rejected"
    return "unknown" if action.outcome == "unknown" else "error"


def outcomes(actions: Sequence[ActionRecord]) -> tuple[ActOutcome, ...]:
    """The outcomes of a turn's answered calls, in call order."""
    return tuple(act_outcome(a) for a in sorted(actions, key=lambda a: a.call_index))


def function_response(action: ActionRecord) -> dict[str, Any]:
    if action.status == "completed" and action.original_args is not None:
        # Approved with edits: the model learns the call ran with the user's arguments, not its own.
        return {"result": action.result or {}, "executedWithArguments": action.args,
                "note": "the user edited the arguments of this call before approving it; it ran with "
                        "executedWithArguments"}
    if action.status == "completed":
        return action.result or {}
    if action.status == "rejected":
        return {"error": action.error or "the call was rejected", "rejected": True}
    if action.outcome == "unknown":
        return {"error": action.error or "the outcome of this call is unknown", "outcome": "unknown"}
    return {"error": action.error or "the call failed"}


def responses_turn(calls: Sequence[FunctionCall], actions: Sequence[ActionRecord]) -> Turn:
    """Exactly one function response per call, in call order."""
    by_index = {a.call_index: a for a in actions}
    parts = [Part(function_response=FunctionResponse(name=fc.name, id=fc.id,
                                                     response=function_response(by_index[i])))
             for i, fc in enumerate(calls)]
    return Turn(role="user", parts=parts)
