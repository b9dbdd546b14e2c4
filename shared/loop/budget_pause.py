"""A unit pauses at its money budget instead of failing (docs/budgets.md).

Before each model call of the loop, :func:`check` counts the call at its maximum cost against
the run's ``budgetUsd`` and the user's daily and monthly caps (reserving it against those, see
``shared/state/budget_repo.py``). Over one, the step does not call the model: it returns a pause
on a **budget approval** (``kind: budget``) bound to an action of the reserved name
``budget_increase`` whose arguments say the scope, the limit, the spend so far and the proposed
new limit. The action sits at the turn index the next model turn would take, so resuming finds
no model turn to close and nothing of it reaches the model's conversation.

Deciding it is ``POST /api/agent/approve`` like any approval. On resume (:func:`settle`):
approved, the limit becomes the proposed one (the run's ``budgetUsd``, or the user's cap of the
day or month) and the loop goes on exactly where it stopped (the same model call, now checked
against the raised limit); rejected (or expired), the unit ends ``BUDGET_EXCEEDED`` with what it
had done and says so.
"""

from __future__ import annotations

from shared.events import ToolCallEvent, ToolResultEvent
from shared.failures import FailureCode
from shared.loop.context import RunContext
from shared.loop.outcomes import NextStepInterruption
from shared.models.base import ModelRequest
from shared.state.host_states import PlanRunState
from shared.state.records import BUDGET_TOOL as BUDGET_TOOL
from shared.state.records import ActionRecord, ApprovalRecord, now
from shared.state.transitions import move_action, move_run
from shared.tools.registry import args_hash
from shared.usage.budget import Overrun, call_max_cost, run_overrun


def check(ctx: RunContext, model: str, request: ModelRequest) -> NextStepInterruption | None:
    """Before a model call: a pause when a budget has no room for it (and for the host's own calls
    that follow it: a plan's reflection on the act), else None (the reservation against the user's
    caps, if any, is released once the step's ledger entries are committed)."""
    if not ctx.budgeted:
        return None
    over = room(ctx, call_max_cost(ctx.services.settings, model, request) + follow_up_max(ctx))
    return None if over is None else pause(ctx, over)


def check_resumed_act(ctx: RunContext) -> bool:
    """On resume, before the approved tool calls of the last model turn run: room for the host's
    calls that follow them (a plan's reflection on the act). False when the unit paused instead
    (committed): approving runs the tools then."""
    if not ctx.budgeted:
        return True
    last = ctx.turns[-1] if ctx.turns else None
    extra = follow_up_max(ctx) if last is not None and last.role == "model" and last.function_calls else 0.0
    over = room(ctx, extra) if extra else None
    if over is None:
        return True
    ctx.host.interrupt(ctx, pause(ctx, over))
    return False


def follow_up_max(ctx: RunContext) -> float:
    """The most the host's own model calls after a step may cost (a plan run's reflection on the
    act: ``Host.after_step_max_usd``); 0 for other units."""
    return ctx.host.after_step_max_usd(ctx)


def room(ctx: RunContext, max_usd: float) -> Overrun | None:
    """The limit that has no room for ``max_usd`` more (the run's budget first, then the user's
    caps); None when all have, ``max_usd`` then reserved against the caps until the next commit."""
    s = ctx.services
    settings = s.settings
    over = run_overrun(ctx.run.budget_usd, ctx.run.cost_usd, max_usd)
    if over is not None or (not settings.budget_user_daily_usd and not settings.budget_user_monthly_usd):
        return over
    call_id = s.new_id("bud")
    reached = s.budgets.reserve(ctx.run.uid, call_id, max_usd, daily_usd=settings.budget_user_daily_usd,
                                monthly_usd=settings.budget_user_monthly_usd,
                                ttl_s=settings.lease_ttl_s + settings.model_timeout_s)
    if reached is not None:
        return Overrun(reached.scope, reached.cap_usd, reached.spent_usd, max_usd)
    uid = ctx.run.uid
    ctx.after_commit.append(lambda: s.budgets.release(uid, call_id))
    return None


def pause(ctx: RunContext, over: Overrun) -> NextStepInterruption:
    s = ctx.services
    run = ctx.run
    text = over.describe()
    args = {"scope": over.scope, "limitUsd": over.limit_usd, "spentUsd": over.spent_usd,
            "callMaxUsd": over.call_max_usd, "proposedLimitUsd": over.proposed_usd}
    turn_index = len(ctx.turns)
    action = ActionRecord(action_id=s.new_id("act"), run_id=run.run_id, uid=run.uid, tool=BUDGET_TOOL, args=args,
                          args_hash=args_hash(args), turn_index=turn_index, call_index=0, policy_reason=text)
    plan = run.host_state if isinstance(run.host_state, PlanRunState) else None
    approval = ApprovalRecord(approval_id=s.new_id("apr"), uid=run.uid, run_id=run.run_id, kind="budget",
                              action_id=action.action_id, tool=BUDGET_TOOL, args_hash=action.args_hash,
                              reason=text, preview=text, spent_usd=over.spent_usd, limit_usd=over.limit_usd,
                              proposed_limit_usd=over.proposed_usd, budget_scope=over.scope,
                              expires_at=now() + s.settings.approval_ttl_s,
                              session_id=plan.session_id if plan else None, task_id=plan.task_id if plan else None)
    approval.expire_at = approval.expires_at + s.settings.event_retention_s
    move_action(action, "awaiting_confirmation")
    action.approval_id = approval.approval_id
    ctx.ask(approval)
    ctx.put_action(action)
    ctx.audit(ctx.new_audit(kind="approval_requested", action_id=action.action_id, approval_id=approval.approval_id,
                            tool=BUDGET_TOOL, reason=text))
    ctx.emit(ToolCallEvent(toolName=BUDGET_TOOL, preview=text, actionId=action.action_id,
                           status="awaiting_confirmation"))
    return NextStepInterruption(turn_index, [action])


def settle(ctx: RunContext, actions: list[ActionRecord]) -> bool:
    """On resume: apply a decided budget approval. True when the loop may go on (none, or
    approved); False when the unit ended (rejected or expired: committed by its host)."""
    decided = [a for a in actions if a.tool == BUDGET_TOOL and a.turn_index == ctx.run.pending_turn
               and a.status in ("approved", "rejected")]
    if not decided:
        return True
    action = decided[0]
    run = ctx.run
    run.pending_turn, run.pending_approval_ids, run.pause_expires_at, run.paused_action_ids = None, [], None, None
    scope, new = str(action.args["scope"]), float(action.args["proposedLimitUsd"])
    if action.status == "rejected":
        ctx.put_action(action)
        ctx.emit(ToolResultEvent(toolName=BUDGET_TOOL, actionId=action.action_id, status="rejected",
                                 error=action.error))
        ctx.host.fail(ctx, FailureCode.BUDGET_EXCEEDED,
                      f"stopped at {action.policy_reason or 'the budget'} The raise was not approved; "
                      f"the work done so far is kept (${run.cost_usd:.4f} spent by this run).")
        return False
    if scope == "run":
        run.budget_usd = new
    else:
        ctx.services.budgets.raise_cap(run.uid, scope, new)
    move_action(action, "executing")
    move_action(action, "completed")
    action.outcome, action.result = "success", {"limitUsd": new, "scope": scope}
    ctx.put_action(action)
    ctx.emit(ToolResultEvent(toolName=BUDGET_TOOL, actionId=action.action_id, status="completed",
                             output=action.result))
    move_run(run, "planning")
    return True
