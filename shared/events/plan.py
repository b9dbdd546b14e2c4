"""The run events of plans: a plan's progress in the log of the run that executes it, relayed into
the chat run that started it (docs/event-protocol.md).

Apart from the loop's events (``shared/events/loop.py``) because these need the plan contracts:
a chat run's cold start never imports them unless it makes or relays a plan (issue 20).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.events.loop import Event
from shared.plans.contracts import Plan, SessionResultView
from shared.state.plan_records import PlanChange, SessionStatus


class PlanCreatedEvent(Event):
    """``agent_create_plan`` made a plan (a plan session ``planId``)."""

    type: Literal["plan_created"] = "plan_created"
    planId: str
    executionMode: str
    plan: Plan


class PlanReadyForReviewEvent(Event):
    type: Literal["plan_ready_for_review"] = "plan_ready_for_review"
    planId: str
    plan: Plan
    reasoning: str = ""


class PlanReviewEvent(Event):
    type: Literal["plan_review"] = "plan_review"
    planId: str
    verdict: Literal["approved", "rejected", "needs_changes"]
    notes: str = ""


class StepStartEvent(Event):
    """A step (task) of a plan began: in the log of the plan's run (a session's view shows it as
    ``task_start``), relayed into the chat run that started the plan."""

    type: Literal["step_start"] = "step_start"
    planId: str
    stepId: str
    title: str
    index: int | None = None
    """1-based position among the plan's live steps (with ``total``)."""
    total: int | None = None


class StepCompleteEvent(Event):
    type: Literal["step_complete"] = "step_complete"
    planId: str
    stepId: str
    status: str
    summary: str = ""


class ExecutorReasonEvent(Event):
    """The executor's reasoning before a step's act (a session's view: ``reason``)."""

    type: Literal["executor_reason"] = "executor_reason"
    planId: str
    stepId: str
    text: str


class ExecutorReflectEvent(Event):
    """The reflection after a step's act (a session's view: ``reflect``)."""

    type: Literal["executor_reflect"] = "executor_reflect"
    planId: str
    stepId: str
    taskComplete: bool
    taskFailed: bool
    summary: str
    modifications: int = 0


class PlanStatusEvent(Event):
    """The plan session's status changed while its run executed it (a session's view: ``status``)."""

    type: Literal["plan_status"] = "plan_status"
    planId: str
    status: SessionStatus


class PlanResultEvent(Event):
    """The plan session's outcome, the last plan event of its run (a session's view: ``result``)."""

    type: Literal["plan_result"] = "plan_result"
    planId: str
    result: SessionResultView


class ExecutorActEvent(Event):
    """A step of the run's plan calls a tool (the plan session's ``act``), relayed live."""

    type: Literal["executor_act"] = "executor_act"
    planId: str
    stepId: str
    toolName: str
    preview: str
    actionId: str | None = None


class ExecutorObserveEvent(Event):
    """What that call answered (the plan session's ``observe``)."""

    type: Literal["executor_observe"] = "executor_observe"
    planId: str
    stepId: str
    toolName: str
    outcome: str
    observation: dict[str, Any]


class PlanApprovalRequiredEvent(Event):
    """A step of the run's plan waits for the user's decision (the approvals inbox lists it;
    decide with ``POST /api/agent/approve``)."""

    type: Literal["approval_required"] = "approval_required"
    planId: str
    stepId: str
    approvalId: str
    toolName: str
    preview: str
    reason: str = ""


class RunPlanUpdatedEvent(Event):
    """The plan changed while it ran (a reflection added, changed or dropped steps)."""

    type: Literal["plan_updated"] = "plan_updated"
    planId: str
    plan: Plan
    changes: list[PlanChange] = Field(default_factory=list)
    reason: str = ""
