"""A chat run's plan, live in the run's own event log (seed 003 §4.3: one streaming session).

While a run waits on the plan its ``agent_create_plan`` / ``agent_execute_plan`` started, the plan
session's events are shown as events of the run: ``task_start`` → ``step_start``, ``act`` →
``executor_act``, ``observe`` → ``executor_observe``, ``approval_required``, ``plan_updated``,
``task_complete`` → ``step_complete``. They are derived, never copied by hand: the n-th relayed
event of the session's (append-only) log is the run's event ``lastSeq + n``. Readers (the live
stream, ``GET .../events``) derive them while the run waits; when the plan ends, the resumed run
persists exactly the same events with the same ``seq`` before anything else, so a reconnecting
client reads what a live one saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.events import (
    ExecutorActEvent,
    ExecutorObserveEvent,
    PlanApprovalRequiredEvent,
    RunPlanUpdatedEvent,
    StepCompleteEvent,
    StepStartEvent,
    event_to_doc,
)
from shared.plans.contracts import Plan
from shared.state.host_states import ChatState

if TYPE_CHECKING:
    from shared.state.records import RunRecord
    from shared.state.sessions_repo import SessionsRepo


Relayed = (StepStartEvent | ExecutorActEvent | ExecutorObserveEvent | PlanApprovalRequiredEvent | RunPlanUpdatedEvent
           | StepCompleteEvent)


def relayed_plan(run: RunRecord) -> tuple[str, int] | None:
    """``(planId, session seq to relay after)`` of the plan ``run`` waits on, or None."""
    state = run.host_state
    if not isinstance(state, ChatState) or state.relay_plan_id is None:
        return None
    return state.relay_plan_id, state.relay_after


def as_run_event(ev: dict[str, Any], plan_id: str) -> Relayed | None:
    """The run event a plan-session event is shown as (None: not relayed)."""
    kind = ev.get("type")
    step = str(ev.get("taskId", ""))
    if kind == "task_start":
        return StepStartEvent(planId=plan_id, stepId=step, title=str(ev.get("title", "")))
    if kind == "act":
        return ExecutorActEvent(planId=plan_id, stepId=step, toolName=str(ev.get("tool", "")),
                                preview=str(ev.get("preview", "")), actionId=ev.get("actionId"))
    if kind == "observe":
        return ExecutorObserveEvent(planId=plan_id, stepId=step, toolName=str(ev.get("tool", "")),
                                    outcome=str(ev.get("outcome", "")), observation=dict(ev.get("observation") or {}))
    if kind == "approval_required":
        return PlanApprovalRequiredEvent(planId=plan_id, stepId=step, approvalId=str(ev.get("approvalId", "")),
                                         toolName=str(ev.get("tool", "")), preview=str(ev.get("preview", "")),
                                         reason=str(ev.get("reason", "")))
    if kind == "plan_updated":
        return RunPlanUpdatedEvent(planId=plan_id, plan=Plan.model_validate(ev["plan"]),
                                   reason=str(ev.get("reason", "")))
    if kind == "task_complete":
        return StepCompleteEvent(planId=plan_id, stepId=step, status=str(ev.get("status", "")),
                                 summary=str(ev.get("summary", "")))
    return None


def relayed_events(sessions: SessionsRepo, plan_id: str, after: int) -> list[Relayed]:
    """The run events the plan's session events after ``after`` are shown as, in order, unnumbered."""
    out: list[Relayed] = []
    for ev in sessions.events(plan_id, after=after):
        mapped = as_run_event(ev, plan_id)
        if mapped is not None:
            out.append(mapped)
    return out


def pending_relay(sessions: SessionsRepo, run: RunRecord) -> list[dict[str, Any]]:
    """What a reader shows after the persisted log of a run waiting on its plan: the relayed events
    numbered from ``run.lastSeq + 1`` (the numbers the resumed run will persist them with)."""
    plan = relayed_plan(run)
    if plan is None:
        return []
    docs = []
    for i, event in enumerate(relayed_events(sessions, *plan), start=1):
        event.seq = run.last_seq + i
        docs.append(event_to_doc(event))
    return docs
