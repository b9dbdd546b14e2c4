"""The ``plan`` host: a confirmed session's tasks, each run as a ReAct loop on the kernel.

A session is one unit of work (``runs/{runId}``, host ``plan``, from its creation: planning is its
first step, ``plans/unit.py``); this host drives its execution. Each loop step is
Reason + Act (the model's text, then one tool call, under the same policy and approvals as chat
runs); Observe is the tool's answer; every act is followed by this host's own loop step
(``after_step``): the Reflect call (structured: task complete / failed / plan modifications) and
what it means. The step's commit holds the ``{reason, action, observation}`` triplet (one
document per act), the reflection's plan changes (a new plan version) and the session's events. A
text answer without a tool call ends the task. The host state (``PlanRunState``: the tasks, kept
only here, the current one and the plan version) lives in the run document, so it commits
atomically with each step and a crash anywhere is recovered from the store alone.

Stops: the user cancelled or the session deadline passed (checked before every act; every model
and tool call gets at most the time left) end the session ``cancelled`` / ``deadline_exceeded``;
a task that fails for good, or runs out of acts (``PLAN_MAX_ACTS_PER_TASK``), fails it; a spent
invocation budget yields (``continue``), and so does the end of each task.
"""

from __future__ import annotations

import time
from typing import Any

from shared.config import Settings
from shared.delivery.events import SessionEventType, published, session_announced
from shared.events.plan import (
    ExecutorReflectEvent,
    PlanApprovalRequiredEvent,
    PlanResultEvent,
    PlanStatusEvent,
    StepCompleteEvent,
)
from shared.events.run import RunEvent
from shared.failures import FailureCode
from shared.loop import stops
from shared.loop.context import RunContext
from shared.loop.host import Budget, Host
from shared.loop.outcomes import (
    BudgetSpent,
    HostStep,
    NextStepFailed,
    NextStepFinalOutput,
    NextStepInterruption,
    NextStepRunAgain,
    NextStepYield,
    Settled,
    StepOutcome,
    StopOutcome,
)
from shared.models.base import ToolDeclaration
from shared.plan_views import SessionResultView
from shared.plans import plan_edits, planner, react
from shared.plans.parent import wake_parent
from shared.plans.plan_state import KIND, ended_mode, plan_state, task_turn
from shared.plans.reflect import max_cost as reflect_max_cost
from shared.plans.reflect import reflect
from shared.state.host_states import PlanRunState
from shared.state.plan_records import PlanTask, SessionResult, SessionStatus, TaskStatus
from shared.state.plan_tasks import OPEN_TASK_STATUSES
from shared.state.records import RunError
from shared.state.sessions_repo import SessionsRepo

__all__ = ["KIND", "STOP_STATUS", "PlanHost", "plan_state", "task_turn"]

STOP_STATUS: dict[str, SessionStatus] = {FailureCode.DEADLINE_EXCEEDED: "deadline_exceeded",
                                         FailureCode.CANCELLED: "cancelled"}
RUN_END: dict[str, stops.FailedStatus] = {"deadline_exceeded": "deadline_exceeded", "cancelled": "cancelled"}
"""The status of the run a session that did not finish its work ends with (else ``failed``)."""


class PlanHost(Host):
    """Wires the parts (``react``: act records, ``reflect``, ``plan_edits``, ``parent``: wake-up)
    into the loop's hooks and stops; it decides what a reflection means for the task."""

    kind = KIND
    operation_type = "executor"

    def __init__(self, sessions: SessionsRepo) -> None:
        self.sessions = sessions

    # ---- budget ------------------------------------------------------------------------------
    def budget(self, settings: Settings) -> Budget:
        return Budget(deadline=time.monotonic() + settings.run_deadline_s,
                      max_steps=settings.plan_steps_per_invocation, yield_margin_s=settings.plan_yield_margin_s)

    def budget_spent(self, ctx: RunContext, why: BudgetSpent) -> StopOutcome:
        if time.time() >= plan_state(ctx).deadline:
            return NextStepFailed(FailureCode.DEADLINE_EXCEEDED, "the session's deadline passed")
        return NextStepYield(why)

    def before_step(self, ctx: RunContext) -> StopOutcome | None:
        state = plan_state(ctx)
        # A cancel asks the run itself to stop (``SessionsRepo.request_cancel``): read with the run
        # at its claim, or adopted by the commit it made fail; no read of the session per act.
        if ctx.run.stop_requested is not None:
            return NextStepFailed(FailureCode.CANCELLED, "cancelled by the user")
        left = state.deadline - time.time()
        if left <= 0:
            return NextStepFailed(FailureCode.DEADLINE_EXCEEDED, "the session's deadline passed")
        # Every model and tool call gets at most the time left before the user's deadline.
        ctx.deadline = min(ctx.deadline, time.monotonic() + left)
        task = state.current
        if task is not None and task.acts >= ctx.services.settings.plan_max_acts_per_task:
            return NextStepFailed(FailureCode.ACT_LIMIT, f"task {task.id} used its "
                                  f"{ctx.services.settings.plan_max_acts_per_task} acts (PLAN_MAX_ACTS_PER_TASK)")
        return None

    # ---- tools -------------------------------------------------------------------------------
    def declarations(self, ctx: RunContext) -> list[ToolDeclaration]:
        allowed = plan_state(ctx).tools
        every = ctx.registry.declarations()
        return every if allowed is None else [d for d in every if d.name in allowed]

    def approval_subject(self, ctx: RunContext) -> tuple[str | None, str | None]:
        state = plan_state(ctx)
        return state.session_id, state.task_id

    def allows(self, ctx: RunContext, tool: str) -> bool:
        allowed = plan_state(ctx).tools
        return allowed is None or tool in allowed

    # ---- the ReAct act -----------------------------------------------------------------------
    def after_step_max_usd(self, ctx: RunContext) -> float:
        """The reflection that follows each act, at its maximum (docs/budgets.md)."""
        return reflect_max_cost(ctx, plan_state(ctx))

    def after_step(self, ctx: RunContext, outcome: Settled) -> HostStep | None:
        """Every act (a tool call answered, or a text that ends the task) is followed by this
        host's step: its ReAct records, the reflection (a model call) and what it means."""
        if isinstance(outcome, NextStepFinalOutput) and plan_state(ctx).finished:
            return None  # the plan's own end (below): nothing left to reflect on
        return lambda: self._act_step(ctx, outcome)

    def _act_step(self, ctx: RunContext, outcome: Settled) -> StepOutcome:
        if isinstance(outcome, NextStepRunAgain):
            stop = self._after_act(ctx, ctx.turns[-2].text.strip(), react.acts_of_last_turn(ctx, outcome.outcomes))
            return outcome if stop is None else stop
        stop = self._after_act(ctx, "", [react.task_done(outcome.text)], task_done=True)
        # The next task starts in the next invocation (a durable slice per task).
        return NextStepYield("steps") if stop is None else stop

    def finish(self, ctx: RunContext, text: str) -> None:
        if not plan_state(ctx).finished:  # a final text is reflected on first (after_step)
            self.fail(ctx, FailureCode.INCONSISTENT_STATE, "the task ended without its reflection")
            return
        rejected = any(t.status == "rejected" for t in plan_state(ctx).tasks)
        self._end(ctx, "rejected" if rejected else "completed", None, "")

    def _after_act(self, ctx: RunContext, reason: str, acts: list[react.Act], *,
                   task_done: bool = False) -> StopOutcome | None:
        state = plan_state(ctx)
        task = state.current
        if task is None:
            return NextStepFailed(FailureCode.INCONSISTENT_STATE, "no current task")
        react.record(ctx, self.sessions, state.session_id, task, reason, acts)
        reflection = reflect(ctx, state, task, acts[-1])
        tasks = [task if t.id == task.id else t for t in state.tasks]
        return self._settle(ctx, state, tasks, task, reflection, task_done)

    def _settle(self, ctx: RunContext, state: PlanRunState, tasks: list[PlanTask], task: PlanTask,
                reflection: planner.Reflection | None, task_done: bool) -> StopOutcome | None:
        """What the reflection means: plan edits, then the task completed, failed or going on."""
        settings = ctx.services.settings
        # The model's word ends a task; it completes it unless the user rejected acts the task
        # needed and the reflection does not say the goal was met without them (then: rejected).
        said_complete = reflection is not None and reflection.taskComplete
        complete = said_complete or (task_done and not task.rejected_acts)
        ended: TaskStatus | None = "completed" if complete else "rejected" if task_done else None
        failed = reflection is not None and reflection.taskFailed and not complete
        summary = reflection.summary if reflection is not None else ""
        ctx.emit(ExecutorReflectEvent(planId=state.session_id, stepId=task.id, taskComplete=complete,
                                      taskFailed=failed, summary=summary,
                                      modifications=len(reflection.modifications) if reflection else 0))
        if reflection is not None and reflection.modifications:
            tasks, changes = plan_edits.modify(tasks, reflection.modifications, state.plan_version + 1)
        else:
            changes = []
        if plan_edits.live_count(tasks) > settings.plan_max_tasks:
            state.tasks = tasks
            return NextStepFailed(FailureCode.PLAN_TOO_LARGE,
                                  f"the plan would exceed {settings.plan_max_tasks} tasks (PLAN_MAX_TASKS)")
        plan_edits.record_version(ctx, self.sessions, state, tasks, changes, summary)
        current = next(t for t in tasks if t.id == task.id)
        if failed:
            current.status, current.summary = "failed", summary
            state.tasks = tasks
            return NextStepFailed(FailureCode.TASK_FAILED, f"task {current.id} failed: {summary}"[:1000])
        if ended is not None:
            if ended == "rejected":
                why = "the user rejected: " + "; ".join(current.rejected_acts)
                summary = f"{why} ({summary})" if summary else why
            current.status, current.summary = ended, summary[:1000]
            ctx.emit(StepCompleteEvent(planId=state.session_id, stepId=current.id, status=ended,
                                       summary=summary[:1000]))
            state.tasks = tasks
            nxt = plan_edits.start_next(ctx, state)
            if nxt is None:
                state.finished = True
                return NextStepFinalOutput("every task of the plan is completed")
            return None
        state.tasks = tasks
        return None

    # ---- stops -------------------------------------------------------------------------------
    def interrupt(self, ctx: RunContext, outcome: NextStepInterruption) -> None:
        state = plan_state(ctx)
        task = state.current
        for approval in ctx.waiting_approvals(outcome.waiting):
            ctx.emit(PlanApprovalRequiredEvent(planId=state.session_id, stepId=task.id if task else "",
                                               approvalId=approval.approval_id, toolName=approval.tool,
                                               preview=approval.preview, reason=approval.reason,
                                               approval=approval))
        ids = _announce(ctx, "session.awaiting_approval") if any(a.approval_id for a in outcome.waiting) else []
        stops.pause(ctx, outcome)
        _published(ctx, ids)

    def fail(self, ctx: RunContext, code: FailureCode, message: str) -> None:
        status = STOP_STATUS.get(code, "failed")
        state = plan_state(ctx)
        task = state.current
        if task is not None and status == "failed" and task.status == "in_progress":
            task.status, task.summary = "failed", message
            state.tasks = [task if t.id == task.id else t for t in state.tasks]
            ctx.emit(StepCompleteEvent(planId=state.session_id, stepId=task.id, status="failed",
                                       summary=message[:1000]))
        if status == "cancelled":  # no task is left pending or in progress by a cancelled session
            for t in state.tasks:
                if t.status in OPEN_TASK_STATUSES:
                    was = t.status
                    t.status = "cancelled"
                    if was == "in_progress":
                        ctx.emit(StepCompleteEvent(planId=state.session_id, stepId=t.id, status="cancelled",
                                                   summary=message[:1000]))
        self._end(ctx, status, code, message)

    def _end(self, ctx: RunContext, status: SessionStatus, code: FailureCode | None, message: str) -> None:
        sid = plan_state(ctx).session_id
        final: list[RunEvent] = [PlanStatusEvent(planId=sid, status=status),
                 PlanResultEvent(planId=sid, result=SessionResultView(status=status, log=[]))]
        result = SessionResult(status=status)
        extra: dict[str, Any] = {"status": status, "result": result.to_doc()}
        if code is not None:
            extra["error"] = RunError(code=code, message=message).to_doc()
        ctx.write(self.sessions.update_write(sid, extra))  # the index's status (its list and the sweep query it)
        ctx.run.mode = ended_mode(ctx.run)
        parent = wake_parent(ctx)
        ids = _announce(ctx, f"session.{status}",  # type: ignore[arg-type]  # the five ends, all SessionEventType
                        extra.get("error"))
        # The run ends with the session's status (docs/plan-sessions.md, "Statuses").
        if code is None:
            stops.complete(ctx, final=final, status="rejected" if status == "rejected" else "completed")
        else:
            stops.fail(ctx, code, message, final=final, status=RUN_END.get(status, "failed"))
        _published(ctx, ids)
        if parent is not None:
            ctx.services.outbox.deliver_recorded(*parent)  # as the final commit recorded it: not read back


def _announce(ctx: RunContext, event: SessionEventType, error: dict[str, Any] | None = None) -> list[str]:
    """The session's webhook deliveries of this transition (``session.*``), in the step's commit;
    the user's webhooks are listed through the invocation's stamps, as a chat run's stops do (no
    query for a user known to have none, or whose list this process read at the same stamp)."""
    services = ctx.services
    writes, ids = session_announced(services.runs.store, services.outbox, services.new_id, ctx.run.uid, event,
                                    plan_state(ctx).session_id, run_id=ctx.run.run_id, error=error,
                                    stamped=None if ctx.stamps is None else (services.stamped, ctx.stamps))
    ctx.write(*writes)
    return ids


def _published(ctx: RunContext, ids: list[str]) -> None:
    published(ctx.services.outbox, ids)
