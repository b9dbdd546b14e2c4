"""The run events of plans: a plan's progress in the log of the run that executes it, relayed into
the chat run that started it (docs/event-protocol.md).

Apart from the loop's events (``shared/events/loop.py``) because these need the plan contracts:
a chat run's cold start never imports them unless it makes or relays a plan (issue 20).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.events.loop import Event
from shared.plan_views import Plan, SessionResultView
from shared.state.plan_records import PlanChange, SessionStatus
from shared.state.records import ActOutcome, Approval


class PlanEvent(Event):
    """An event about a plan session ``planId``: its ``type`` first on the wire, as every event's."""

    type: str
    planId: str


class PlanRunEvent(PlanEvent):
    """An event of the run that executes a plan: what a session's clients read, in the session's
    words (``shared/events/session.py``, one mapping at the edge). A new one needs its class here,
    its place in ``RunEvent`` (``run.py``) and the code that emits it."""


class StepEvent(PlanRunEvent):
    """An event of one step (task) ``stepId`` of the plan."""

    stepId: str


class PlanCreatedEvent(PlanEvent):
    """``agent_create_plan`` made a plan (a plan session ``planId``)."""

    type: Literal["plan_created"] = "plan_created"
    executionMode: str
    plan: Plan


class PlanReadyForReviewEvent(PlanEvent):
    type: Literal["plan_ready_for_review"] = "plan_ready_for_review"
    plan: Plan
    reasoning: str = ""


class PlanReviewEvent(PlanEvent):
    type: Literal["plan_review"] = "plan_review"
    verdict: Literal["approved", "rejected", "needs_changes"]
    notes: str = ""


class StepStartEvent(StepEvent):
    """A step (task) of a plan began: in the log of the plan's run (a session's view shows it as
    ``task_start``), relayed into the chat run that started the plan."""

    type: Literal["step_start"] = "step_start"
    title: str
    index: int | None = None
    """1-based position among the plan's live steps (with ``total``)."""
    total: int | None = None


class StepCompleteEvent(StepEvent):
    type: Literal["step_complete"] = "step_complete"
    status: Literal["completed", "failed", "rejected", "cancelled"]
    summary: str = ""


class ExecutorReasonEvent(StepEvent):
    """The executor's reasoning before a step's act (a session's view: ``reason``)."""

    type: Literal["executor_reason"] = "executor_reason"
    text: str


class ExecutorReflectEvent(StepEvent):
    """The reflection after a step's act (a session's view: ``reflect``)."""

    type: Literal["executor_reflect"] = "executor_reflect"
    taskComplete: bool
    taskFailed: bool
    summary: str
    modifications: int = 0


class PlanStatusEvent(PlanRunEvent):
    """The plan session's status changed while its run executed it (a session's view: ``status``)."""

    type: Literal["plan_status"] = "plan_status"
    status: SessionStatus


class PlanResultEvent(PlanRunEvent):
    """The plan session's outcome, the last plan event of its run (a session's view: ``result``)."""

    type: Literal["plan_result"] = "plan_result"
    result: SessionResultView


class ExecutorActEvent(StepEvent):
    """A step of the run's plan calls a tool (the plan session's ``act``), relayed live."""

    type: Literal["executor_act"] = "executor_act"
    toolName: str
    preview: str
    actionId: str | None = None


class ExecutorObserveEvent(StepEvent):
    """What that call answered (the plan session's ``observe``)."""

    type: Literal["executor_observe"] = "executor_observe"
    toolName: str
    outcome: ActOutcome
    observation: dict[str, Any]


class PlanApprovalRequiredEvent(StepEvent):
    """A step of the run's plan waits for the user's decision (the approvals inbox lists it;
    decide with ``POST /api/agent/approve``). ``approval`` is the approval in the one shape the
    inbox shows (absent in logs written before it was sent); the flat fields stay for clients
    written against them."""

    type: Literal["approval_required"] = "approval_required"
    approvalId: str
    toolName: str
    preview: str
    reason: str = ""
    approval: Approval | None = None


class RunPlanUpdatedEvent(PlanRunEvent):
    """The plan changed while it ran (a reflection added, changed or dropped steps)."""

    type: Literal["plan_updated"] = "plan_updated"
    plan: Plan
    changes: list[PlanChange] = Field(default_factory=list)
    reason: str = ""
