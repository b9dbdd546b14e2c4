"""The ``plan`` host: a confirmed session's tasks, each run as a ReAct loop on the kernel.

The session's execution is one unit of work (``runs/{runId}``, host ``plan``). Each loop step is
Reason + Act (the model's text, then one tool call, under the same policy and approvals as chat
runs); Observe is the tool's answer; after every act this host makes the Reflect call (structured:
task complete / failed / plan modifications) and commits, with the step, the ``{reason, action,
observation}`` triplet (one document per act), the reflection's plan changes (a new plan version),
task statuses and the session's events. A text answer without a tool call ends the task. The host
state (current task, plan, event sequence) lives in the run document, so it commits atomically with
each step and a crash anywhere is recovered from the store alone.

Stops: the user cancelled or the session deadline passed (checked before every act; every model
and tool call gets at most the time left) end the session ``cancelled`` / ``deadline_exceeded``;
a task that fails for good, or runs out of acts (``PLAN_MAX_ACTS_PER_TASK``), fails it; a spent
invocation budget yields (``continue``), and so does the end of each task.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from shared.config import Settings
from shared.durable.kinds import RESUME
from shared.durable.messages import WorkMessage
from shared.events import ErrorEvent, UsageEvent, _Event, event_to_doc
from shared.failures import FailureCode
from shared.loop import stops
from shared.loop.context import RunContext
from shared.loop.host import Budget, Host
from shared.loop.outcomes import (
    BudgetSpent,
    NextStepFailed,
    NextStepFinalOutput,
    NextStepInterruption,
    NextStepYield,
    StopOutcome,
)
from shared.models.base import Part, ToolDeclaration, Turn
from shared.plans import planner
from shared.session_events import (
    ActEvent,
    ApprovalRequiredEvent,
    ObserveEvent,
    PlanUpdatedEvent,
    ReasonEvent,
    ReflectEvent,
    SessionResultEvent,
    SessionStatusEvent,
    TaskCompleteEvent,
    TaskStartEvent,
)
from shared.state.plan_records import PlanChange, PlanTask, PlanVersionRecord, ReactStep, SessionResult, SessionStatus
from shared.state.records import RunError, UsageEntry
from shared.state.sessions_repo import SessionsRepo
from shared.state.transitions import move_action
from shared.usage.meter import MeteredCall, MeteredModel

log = logging.getLogger("agent_runtime.plans")

KIND = "plan"
STOP_STATUS: dict[str, SessionStatus] = {FailureCode.DEADLINE_EXCEEDED: "deadline_exceeded",
                                         FailureCode.CANCELLED: "cancelled"}


def task_turn(task: PlanTask, index: int, total: int) -> Turn:
    return Turn(role="user", parts=[Part(text=f"Task {index + 1} of {total} ({task.id}): {task.title}\n"
                                              f"{task.description}".strip())])


class PlanState:
    """The host's view of ``run.hostState`` (JSON in the run document)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.raw: dict[str, Any] = ctx.run.host_state

    @property
    def session_id(self) -> str:
        return str(self.raw["sessionId"])

    @property
    def objective(self) -> str:
        return str(self.raw["objective"])

    @property
    def deadline(self) -> float:
        return float(self.raw["deadline"])

    @property
    def tasks(self) -> list[PlanTask]:
        return [PlanTask.model_validate(t) for t in self.raw["tasks"]]

    def set_tasks(self, tasks: list[PlanTask]) -> None:
        self.raw["tasks"] = [t.to_doc() for t in tasks]

    @property
    def current(self) -> PlanTask | None:
        cid = self.raw.get("taskId")
        return next((t for t in self.tasks if t.id == cid), None)


class PlanHost(Host):
    kind = KIND
    operation_type = "executor"

    def __init__(self, sessions: SessionsRepo) -> None:
        self.sessions = sessions

    # ---- budget ------------------------------------------------------------------------------
    def budget(self, settings: Settings) -> Budget:
        return Budget(deadline=time.monotonic() + settings.run_deadline_s,
                      max_steps=settings.plan_steps_per_invocation, yield_margin_s=settings.plan_yield_margin_s)

    def budget_spent(self, ctx: RunContext, why: BudgetSpent) -> StopOutcome:
        if time.time() >= PlanState(ctx).deadline:
            return NextStepFailed(FailureCode.DEADLINE_EXCEEDED, "the session's deadline passed")
        return NextStepYield(why)

    def before_step(self, ctx: RunContext) -> StopOutcome | None:
        state = PlanState(ctx)
        got = self.sessions.get(state.session_id)
        if got is None:
            return NextStepFailed(FailureCode.SESSION_NOT_FOUND, "the session is gone")
        if got[0].cancel_requested:
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
        allowed = ctx.run.host_state.get("tools")
        every = ctx.services.registry.declarations()
        return every if allowed is None else [d for d in every if d.name in allowed]

    def allows(self, ctx: RunContext, tool: str) -> bool:
        allowed = ctx.run.host_state.get("tools")
        return allowed is None or tool in allowed

    # ---- events ------------------------------------------------------------------------------
    def emit(self, ctx: RunContext, event: _Event) -> None:
        state = ctx.run.host_state
        state["seq"] = int(state.get("seq", 0)) + 1
        event.seq = state["seq"]
        ctx.write(self.sessions.event_write(state["sessionId"], event_to_doc(event)))

    def _session_fields(self, ctx: RunContext, **extra: Any) -> None:
        state = PlanState(ctx)
        ctx.write(self.sessions.update_write(state.session_id, {
            "currentTaskId": state.raw.get("taskId"), "planVersion": state.raw.get("version", 1),
            "lastSeq": state.raw.get("seq", 0), "usage": ctx.run.usage.model_dump(by_alias=True),
            "costUsd": ctx.run.cost_usd, **extra}))

    # ---- the ReAct act -----------------------------------------------------------------------
    def after_tools(self, ctx: RunContext) -> StopOutcome | None:
        model_turn, answers = ctx.turns[-2], ctx.turns[-1]
        reason = model_turn.text.strip()
        acts: list[dict[str, Any]] = []
        for call, answer in zip(model_turn.function_calls, answers.parts, strict=False):
            response = answer.function_response.response if answer.function_response else {}
            acts.append({"action": {"tool": call.name, "args": dict(call.args),
                                    "preview": self._preview(ctx, call.name, dict(call.args))},
                         "observation": response})
        return self._after_act(ctx, reason, acts)

    def finish(self, ctx: RunContext, text: str) -> None:
        state = PlanState(ctx)
        if state.raw.get("finished"):
            self._end(ctx, "completed", None, "")
            return
        stop = self._after_act(ctx, "", [{"action": {"tool": "task_done"}, "observation": {"text": text}}],
                               task_done=True)
        if stop is None:  # the next task starts in the next invocation (a durable slice per task)
            self.yielded(ctx, NextStepYield("steps"))
        else:
            self.act(ctx, stop)

    def _preview(self, ctx: RunContext, name: str, args: dict[str, Any]) -> str:
        tool = ctx.services.registry.get(name)
        if tool is None:
            return name
        try:
            return tool.preview(tool.validate(args))
        except Exception:
            return name

    def _after_act(self, ctx: RunContext, reason: str, acts: list[dict[str, Any]], *,
                   task_done: bool = False) -> StopOutcome | None:
        state = PlanState(ctx)
        task = state.current
        if task is None:
            return NextStepFailed(FailureCode.INCONSISTENT_STATE, "no current task")
        if reason:
            self.emit(ctx, ReasonEvent(taskId=task.id, text=reason[:4000]))
        for act in acts:
            task.acts += 1
            action, observation = act["action"], act["observation"]
            if action["tool"] != "task_done":
                self.emit(ctx, ActEvent(taskId=task.id, tool=action["tool"], preview=action.get("preview", "")))
                outcome = ("error" if "error" in observation else "ok")
                self.emit(ctx, ObserveEvent(taskId=task.id, tool=action["tool"], outcome=outcome,
                                            observation=_bounded(observation)))
            ctx.write(self.sessions.react_write(state.session_id, ReactStep(
                n=task.acts, task_id=task.id, reason=reason, action=action, observation=_bounded(observation))))
        reflection = self._reflect(ctx, state, task, acts[-1])
        tasks = [task if t.id == task.id else t for t in state.tasks]
        stop = self._apply(ctx, state, tasks, task, reflection, task_done)
        return stop

    def _reflect(self, ctx: RunContext, state: PlanState, task: PlanTask,
                 act: dict[str, Any]) -> planner.Reflection | None:
        services = ctx.services
        entries: list[UsageEntry] = []  # written with the step's commit below, not one by one
        call = MeteredCall(uid=ctx.run.uid, unit_kind="session", unit_id=state.session_id,
                           component="reflector", operation_type="executor")
        model = MeteredModel(services.model_factory(), call, services.settings, entries.append)
        try:
            answer = planner.reflect(model, state.objective, task, state.tasks, act,
                                     timeout_s=max(0.001, ctx.remaining()))
        except Exception as exc:  # a failed reflection must not lose the act: it is recorded, the task goes on
            log.warning("reflection failed: %s", type(exc).__name__, extra={"fields": {
                "component": "reflector", "stage": "reflect", "sessionId": state.session_id}})
            answer = None
        for i, e in enumerate(entries):
            e.entry_id, e.step = f"{state.session_id}-{ctx.run.steps:05d}-r{i}", ctx.run.steps
            ctx.run.usage = ctx.run.usage + e.usage
            ctx.run.cost_usd = round(ctx.run.cost_usd + e.cost_usd, 8)
            ctx.write(*services.usage.entry_writes(e))
        return None if answer is None else answer.value

    def _apply(self, ctx: RunContext, state: PlanState, tasks: list[PlanTask], task: PlanTask,
               reflection: planner.Reflection | None, task_done: bool) -> StopOutcome | None:
        settings = ctx.services.settings
        complete = task_done or (reflection is not None and reflection.taskComplete)
        failed = reflection is not None and reflection.taskFailed and not complete
        summary = reflection.summary if reflection is not None else ""
        self.emit(ctx, ReflectEvent(taskId=task.id, taskComplete=complete, taskFailed=failed, summary=summary,
                                    modifications=len(reflection.modifications) if reflection else 0))
        changes: list[PlanChange] = []
        if reflection is not None and reflection.modifications:
            tasks, changes = _modify(tasks, reflection.modifications, int(state.raw.get("version", 1)) + 1)
        if len([t for t in tasks if t.status != "obsolete"]) > settings.plan_max_tasks:
            state.set_tasks(tasks)
            return NextStepFailed(FailureCode.PLAN_TOO_LARGE,
                                  f"the plan would exceed {settings.plan_max_tasks} tasks (PLAN_MAX_TASKS)")
        if any(c.op in ("add", "modify", "obsolete") for c in changes):
            version = int(state.raw.get("version", 1)) + 1
            state.raw["version"] = version
            for t in tasks:  # orders may have moved: the task documents follow the new version
                if t.id != task.id:
                    ctx.write(self.sessions.task_write(state.session_id, t))
            ctx.write(self.sessions.plan_write(state.session_id, PlanVersionRecord(
                version=version, tasks=tasks, changes=changes, reason=summary)))
            self.emit(ctx, PlanUpdatedEvent(version=version, changes=changes, reason=summary, tasks=tasks))
        elif changes:  # only refused changes: recorded in the events, the plan stays
            self.emit(ctx, PlanUpdatedEvent(version=int(state.raw.get("version", 1)), changes=changes,
                                            reason="refused", tasks=tasks))
        current = next(t for t in tasks if t.id == task.id)
        if failed:
            current.status, current.summary = "failed", summary
            state.set_tasks(tasks)
            ctx.write(self.sessions.task_write(state.session_id, current))
            return NextStepFailed(FailureCode.TASK_FAILED, f"task {current.id} failed: {summary}"[:1000])
        if complete:
            current.status, current.summary = "completed", summary
            ctx.write(self.sessions.task_write(state.session_id, current))
            self.emit(ctx, TaskCompleteEvent(taskId=current.id, status="completed", summary=summary))
            state.set_tasks(tasks)
            nxt = self._start_next(ctx, state)
            self._session_fields(ctx)
            if nxt is None:
                state.raw["finished"] = True
                return NextStepFinalOutput("every task of the plan is completed")
            return None
        ctx.write(self.sessions.task_write(state.session_id, current))
        state.set_tasks(tasks)
        self._session_fields(ctx)
        return None

    def _start_next(self, ctx: RunContext, state: PlanState) -> PlanTask | None:
        tasks = state.tasks
        pending = [t for t in tasks if t.status == "pending"]
        if not pending:
            state.raw["taskId"] = None
            return None
        nxt = pending[0]
        nxt.status = "in_progress"
        state.raw["taskId"] = nxt.id
        state.set_tasks([nxt if t.id == nxt.id else t for t in tasks])
        ctx.write(self.sessions.task_write(state.session_id, nxt))
        live = [t for t in tasks if t.status != "obsolete"]
        index = next(i for i, t in enumerate(live) if t.id == nxt.id)
        ctx.add_turn(task_turn(nxt, index, len(live)))
        self.emit(ctx, TaskStartEvent(taskId=nxt.id, title=nxt.title, index=index + 1, total=len(live)))
        return nxt

    # ---- stops -------------------------------------------------------------------------------
    def interrupt(self, ctx: RunContext, outcome: NextStepInterruption) -> None:
        state = PlanState(ctx)
        task = state.current
        for a in outcome.waiting:
            self.emit(ctx, ApprovalRequiredEvent(taskId=task.id if task else "", approvalId=a.approval_id or "",
                                                 tool=a.tool, preview=self._preview(ctx, a.tool, a.args),
                                                 reason=a.policy_reason or ""))
        self._session_fields(ctx)
        stops.pause(ctx, outcome)

    def fail(self, ctx: RunContext, code: FailureCode, message: str) -> None:
        status = STOP_STATUS.get(code, "failed")
        state = PlanState(ctx)
        task = state.current
        if task is not None and status == "failed" and task.status == "in_progress":
            task.status, task.summary = "failed", message
            ctx.write(self.sessions.task_write(state.session_id, task))
            state.set_tasks([task if t.id == task.id else t for t in state.tasks])
            self.emit(ctx, TaskCompleteEvent(taskId=task.id, status="failed", summary=message[:1000]))
        self._end(ctx, status, code, message)

    def _end(self, ctx: RunContext, status: SessionStatus, code: FailureCode | None, message: str) -> None:
        self.emit(ctx, UsageEvent(usage=ctx.run.usage))
        self.emit(ctx, SessionStatusEvent(status=status, sessionId=PlanState(ctx).session_id))
        result = SessionResult(status=status)
        self.emit(ctx, SessionResultEvent(result=result))
        extra: dict[str, Any] = {"status": status, "result": result.to_doc()}
        if code is not None:
            self.emit(ctx, ErrorEvent(error=message, code=code))
            extra["error"] = RunError(code=code, message=message).to_doc()
        self._session_fields(ctx, **extra)
        entry = self._wake_parent(ctx)
        if code is None:
            stops.complete(ctx)
        else:
            stops.fail(ctx, code, message)
        if entry is not None:
            ctx.services.outbox.deliver(entry)

    def _wake_parent(self, ctx: RunContext) -> str | None:
        """A plan started by a chat run's ``agent_create_plan``: its end decides the waiting call (the
        run resumes and the call answers with the plan's outcome), in this same final commit."""
        state = ctx.run.host_state
        parent_run, parent_action = state.get("parentRunId"), state.get("parentActionId")
        if not parent_run or not parent_action:
            return None
        runs = ctx.services.runs
        action = next((a for a in runs.list_actions(parent_run) if a.action_id == parent_action), None)
        if action is None or action.status != "awaiting_confirmation":
            return None
        move_action(action, "approved")
        action.updated_at = time.time()
        entry = f"plan-{state['sessionId']}"
        ctx.write(runs.action_write(action))
        ctx.write(runs.touch_run_write(parent_run, action.updated_at))
        ctx.write(ctx.services.outbox.record(WorkMessage(kind=RESUME, unitId=parent_run, uid=ctx.run.uid,
                                                         entryId=entry), entry))
        return entry


def _bounded(data: dict[str, Any], limit: int = 8000) -> dict[str, Any]:
    import json

    text = json.dumps(data, ensure_ascii=False, default=str)
    return data if len(text) <= limit else {"truncated": True, "partial": text[:limit]}


def _modify(tasks: list[PlanTask], mods: list[planner.Modification], version: int
            ) -> tuple[list[PlanTask], list[PlanChange]]:
    """Apply a reflection's modifications; one that touches a completed (or unknown) task is
    refused and recorded, never applied."""
    out = [t.model_copy() for t in tasks]
    changes: list[PlanChange] = []
    n = max([int(t.id[1:]) for t in out if t.id[1:].isdigit()] + [0])
    for m in mods:
        target = next((t for t in out if t.id == m.taskId), None)
        if m.op == "add":
            n += 1
            new = PlanTask(id=f"t{n}", title=(m.title or "new task")[:200], description=m.description or "",
                           created_in_version=version)
            at = next((i + 1 for i, t in enumerate(out) if t.id == m.after), len(out))
            out.insert(at, new)
            changes.append(PlanChange(op="add", task_id=new.id, what=f"added task {new.id}: {new.title}", why=m.reason))
        elif target is None or target.status in ("completed", "failed", "obsolete"):
            state = "unknown" if target is None else target.status
            changes.append(PlanChange(op="refine", task_id=m.taskId,
                                      what=f"refused to {m.op} {state} task {m.taskId}", why=m.reason))
        elif m.op == "modify":
            target.title = (m.title or target.title)[:200]
            target.description = m.description if m.description is not None else target.description
            changes.append(PlanChange(op="modify", task_id=target.id, what=f"changed task {target.id}", why=m.reason))
        else:
            target.status = "obsolete"
            changes.append(PlanChange(op="obsolete", task_id=target.id, what=f"task {target.id} is obsolete",
                                      why=m.reason))
    for i, t in enumerate(out):
        t.order = i
    return out, changes
